// HTTP listeners: bind (port 0 picks a free port), count in-flight requests, and drain.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { http } from './node-http.ts';
import type { AddressInfo } from 'node:net';

/** How long a drain waits for the requests it cut to finalize. */
const CUT_FINALIZE_MS = 1000;

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

export interface Listener {
  readonly name: string;
  readonly server: Server;
  /** `host:port` actually bound. */
  readonly address: string;
  inFlight(): number;
  /** Stop accepting, wait for in-flight requests up to `timeoutMs`, then close every connection. */
  drain(timeoutMs: number): Promise<{ timedOut: boolean }>;
}

export interface ListenOptions {
  name: string;
  host: string;
  port: number;
  handler: RequestHandler;
  /** Answer with `Connection: close` once true, so keep-alive clients move on while draining. */
  closing?: () => boolean;
  /** Time allowed to receive a whole request, body included (0 = off): a stalled body must not hold a connection. */
  requestTimeoutMs?: number;
  /** The drain timeout passed: called right before the connections still in use are closed. */
  onCut?: () => void;
}

export async function listen(options: ListenOptions): Promise<Listener> {
  let inFlight = 0;
  let idleWaiter: (() => void) | undefined;
  const requestTimeout = options.requestTimeoutMs ?? 0;
  const server = http.createServer({
    keepAliveTimeout: 65_000,
    headersTimeout: requestTimeout > 0 ? Math.min(66_000, requestTimeout) : 66_000,
    requestTimeout,
    // How often Node checks for expired requests: a timeout is enforced within this much.
    connectionsCheckingInterval: requestTimeout > 0 ? Math.min(30_000, Math.max(100, Math.floor(requestTimeout / 4))) : 30_000,
  }, (req, res) => {
    inFlight++;
    res.once('close', () => {
      inFlight--;
      if (inFlight === 0 && idleWaiter !== undefined) idleWaiter();
    });
    if (options.closing?.() === true) res.shouldKeepAlive = false;
    options.handler(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const info = server.address() as AddressInfo;
  const host = info.family === 'IPv6' ? `[${info.address}]` : info.address;
  return {
    name: options.name,
    server,
    address: `${host}:${info.port}`,
    inFlight: () => inFlight,
    drain(timeoutMs) {
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
