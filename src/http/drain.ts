// In-flight request tracking and graceful drain for a node:http server, shared by the data-plane
// listeners and the admin listener (a Fastify server): the same shutdown rule for both, whoever
// answers the requests.
//
// A drain stops accepting, closes idle kept-alive connections, waits for the requests in flight
// up to a timeout, then closes every connection still open. Requests answered while draining
// carry `Connection: close`, so their clients do not try to reuse a connection about to go.
import type { Server } from 'node:http';

/** How long a drain waits for the requests it cut to finalize. */
const CUT_FINALIZE_MS = 1000;

export interface RequestTracker {
  inFlight(): number;
  /** Stop accepting, wait for in-flight requests up to `timeoutMs`, then close every connection. */
  drain(timeoutMs: number): Promise<{ timedOut: boolean }>;
}

export interface TrackOptions {
  /** Answer with `Connection: close` once true; the drain itself switches it on too. */
  closing?: () => boolean;
  /** The drain timeout passed: called right before the connections still in use are closed. */
  onCut?: () => void;
}

/** Count `server`'s requests from now on; call before it serves any. */
export function trackRequests(server: Server, options: TrackOptions = {}): RequestTracker {
  let inFlight = 0;
  let draining = false;
  let idleWaiter: (() => void) | undefined;
  // First among the request listeners: the keep-alive decision must be made before any handler
  // (Fastify's included) writes the response head.
  server.prependListener('request', (_req, res) => {
    inFlight++;
    res.once('close', () => {
      inFlight--;
      if (inFlight === 0 && idleWaiter !== undefined) idleWaiter();
    });
    if (draining || options.closing?.() === true) res.shouldKeepAlive = false;
  });
  return {
    inFlight: () => inFlight,
    drain(timeoutMs) {
      draining = true;
      return new Promise((resolve) => {
        server.close();
        server.closeIdleConnections();
        const finish = (timedOut: boolean): void => {
          idleWaiter = undefined;
          clearTimeout(timer);
          if (inFlight > 0) options.onCut?.();
          server.closeAllConnections();
          if (inFlight === 0) {
            resolve({ timedOut });
            return;
          }
          // The cut requests still finalize (usage rows, limit releases) as their sockets close:
          // wait for that, briefly, before the caller shuts the sinks and stores they write to.
          const bound = setTimeout(() => resolve({ timedOut }), CUT_FINALIZE_MS);
          idleWaiter = () => {
            clearTimeout(bound);
            resolve({ timedOut });
          };
        };
        const timer = setTimeout(() => finish(true), Math.max(0, timeoutMs));
        if (inFlight === 0) finish(false);
        else idleWaiter = () => finish(false);
      });
    },
  };
}
