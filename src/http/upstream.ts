// The upstream HTTP client: keep-alive connection pools per origin (node:http Agents, chosen by
// benchmark over undici; see bench/README.md), connect and response-head timeouts, and
// failures returned as values rather than thrown.
import http from 'node:http';
import https from 'node:https';
import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http';

export interface UpstreamEndpoint {
  readonly origin: string;
  readonly protocol: 'http:' | 'https:';
  readonly hostname: string;
  readonly port: number;
  readonly path: string;
  readonly agent: http.Agent;
}

export type UpstreamFailureKind = 'timeout' | 'transport' | 'aborted';

export interface UpstreamFailure {
  ok: false;
  kind: UpstreamFailureKind;
  message: string;
}

export interface UpstreamSuccess {
  ok: true;
  response: IncomingMessage;
}

export type UpstreamResult = UpstreamSuccess | UpstreamFailure;

export interface UpstreamCall {
  endpoint: UpstreamEndpoint;
  method: string;
  headers: OutgoingHttpHeaders;
  body?: string | Buffer;
  /** Bound on TCP/TLS connect for a new connection; 0 = none. */
  connectTimeoutMs: number;
  /** Bound from sending until the response head arrives; 0 = none. */
  headersTimeoutMs: number;
  /** Cancellation: `onCancel` registers a callback and returns its unsubscribe function. */
  cancel?: CancelSource;
}

export interface CancelSource {
  onCancel(fn: () => void): () => void;
}

const agents = new Map<string, http.Agent>();

function agentFor(origin: string, secure: boolean): http.Agent {
  let agent = agents.get(origin);
  if (agent === undefined) {
    const options: http.AgentOptions = { keepAlive: true, keepAliveMsecs: 1000, maxFreeSockets: 1024, scheduling: 'lifo' };
    agent = secure ? new https.Agent(options) : new http.Agent(options);
    agents.set(origin, agent);
  }
  return agent;
}

/** Precompile a URL into request options; done once per snapshot, not per request. */
export function compileEndpoint(url: string): UpstreamEndpoint {
  const u = new URL(url);
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`unsupported upstream scheme in ${u.origin}`);
  const secure = u.protocol === 'https:';
  return {
    origin: u.origin,
    protocol: u.protocol,
    hostname: u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname,
    port: u.port === '' ? (secure ? 443 : 80) : Number(u.port),
    path: u.pathname + u.search,
    agent: agentFor(u.origin, secure),
  };
}

/** Close every pooled idle connection (shutdown). */
export function closeUpstreamPools(): void {
  for (const agent of agents.values()) agent.destroy();
  agents.clear();
}

class TimeoutSignal extends Error {}

export function callUpstream(call: UpstreamCall): Promise<UpstreamResult> {
  return new Promise((resolve) => {
    const { endpoint } = call;
    const transport = endpoint.protocol === 'https:' ? https : http;
    let settled = false;
    let headTimer: NodeJS.Timeout | undefined;
    let connectTimer: NodeJS.Timeout | undefined;
    const settle = (result: UpstreamResult): void => {
      if (settled) return;
      settled = true;
      if (headTimer !== undefined) clearTimeout(headTimer);
      if (connectTimer !== undefined) clearTimeout(connectTimer);
      unsubscribe?.();
      resolve(result);
    };
    const req = transport.request({
      method: call.method,
      hostname: endpoint.hostname,
      port: endpoint.port,
      path: endpoint.path,
      agent: endpoint.agent,
      headers: call.headers,
    });
    const onAbort = (): void => {
      req.destroy();
      settle({ ok: false, kind: 'aborted', message: 'client disconnected' });
    };
    let unsubscribe: (() => void) | undefined;
    if (call.cancel !== undefined) {
      unsubscribe = call.cancel.onCancel(onAbort);
      if (settled) return;
    }
    if (call.connectTimeoutMs > 0) {
      req.once('socket', (socket) => {
        if (!socket.connecting) return;
        connectTimer = setTimeout(() => {
          req.destroy(new TimeoutSignal(`connect to ${endpoint.origin} timed out after ${call.connectTimeoutMs}ms`));
        }, call.connectTimeoutMs);
        socket.once(endpoint.protocol === 'https:' ? 'secureConnect' : 'connect', () => clearTimeout(connectTimer));
      });
    }
    if (call.headersTimeoutMs > 0) {
      headTimer = setTimeout(() => {
        req.destroy(new TimeoutSignal(`upstream request timed out after ${call.headersTimeoutMs}ms`));
      }, call.headersTimeoutMs);
    }
    req.once('response', (response) => settle({ ok: true, response }));
    req.once('error', (err) => {
      if (err instanceof TimeoutSignal) settle({ ok: false, kind: 'timeout', message: err.message });
      else settle({ ok: false, kind: 'transport', message: transportMessage(endpoint, err) });
    });
    req.end(call.body);
  });
}

function transportMessage(endpoint: UpstreamEndpoint, err: Error & { code?: string }): string {
  // The origin only: an api_base path or query may carry secrets.
  return `upstream ${endpoint.origin} unreachable: ${err.code ?? err.message}`;
}

/**
 * Read a whole response body, bounded by `timeoutMs` (0 = none) and `maxBytes`. `timeoutMessage`
 * names the overall budget when the bound is what is left of it.
 */
export function readResponseBody(
  response: IncomingMessage,
  timeoutMs: number,
  maxBytes = 64 * 1024 * 1024,
  timeoutMessage?: string,
): Promise<{ ok: true; body: Buffer } | UpstreamFailure> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let timer: NodeJS.Timeout | undefined;
    let settled = false;
    const done = (r: { ok: true; body: Buffer } | UpstreamFailure): void => {
      if (settled) return;
      settled = true;
      if (timer !== undefined) clearTimeout(timer);
      response.removeAllListeners('data');
      resolve(r);
    };
    if (timeoutMs > 0) {
      timer = setTimeout(() => {
        // Settle before destroying: destroy() emits 'aborted' synchronously.
        done({ ok: false, kind: 'timeout', message: timeoutMessage ?? `upstream request timed out after ${timeoutMs}ms` });
        response.destroy();
      }, timeoutMs);
    }
    response.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        done({ ok: false, kind: 'transport', message: `upstream body exceeded ${maxBytes} bytes` });
        response.destroy();
        return;
      }
      chunks.push(chunk);
    });
    response.once('end', () => done({ ok: true, body: chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size) }));
    response.once('error', () => done({ ok: false, kind: 'transport', message: 'upstream connection broke while sending the body' }));
    response.once('aborted', () => done({ ok: false, kind: 'transport', message: 'upstream connection broke while sending the body' }));
  });
}
