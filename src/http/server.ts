// HTTP listeners: bind (port 0 picks a free port), count in-flight requests, drain (drain.ts), and answer
// the requests Node's parser refuses before any handler sees them (400, 408, 413, 431) and CONNECT
// (405), so that they can be logged like every other answered request.
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import { http } from './node-http.ts';
import { REQUEST_ID_HEADER } from './request-id.ts';
import { declaresOverLimit } from './body.ts';
import { trackRequests } from './drain.ts';

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
  /** Every method some route of the listener accepts (the `Allow` of its answer to CONNECT); default `GET, HEAD`. */
  methods?: string;
  /** The request id of a request whose head was read (CONNECT): the caller's, when it may give one; default a new one. */
  requestIdOf?: (headers: IncomingHttpHeaders) => string;
  /** The listener answered a request itself, before any handler saw it. */
  onListenerAnswer?: (answer: ListenerAnswer) => void;
  /**
   * Largest request body the handler accepts (0 = no cap). A request that declares a larger one
   * with `Expect: 100-continue` gets no `100 Continue`: the handler refuses it (413) before the
   * caller sends the body.
   */
  bodyLimitBytes?: number;
}

/** A request the listener answered before a handler saw it: malformed, too large, too slow, or a CONNECT (405, its head read). */
export interface ListenerAnswer {
  status: number;
  /** Sent in the answer's request id header. */
  requestId: string;
  /** `invalid_request`, `request_timeout`, `request_too_large` or `method_not_allowed` (the access log's error_kind). */
  errorKind: string;
  errorMessage: string;
  remoteAddress: string | undefined;
  /** The head timeout for a 408; 0 for a head refused as it arrived. */
  seconds: number;
  /** The request's method, when its head was read (CONNECT). */
  method?: string;
  /** The request's headers, when its head was read (CONNECT): its client address header. */
  headers?: IncomingHttpHeaders;
}

/**
 * The response Node has attached to a socket (`_httpMessage`: what Node's own clientError answer
 * checks). Read only on a client error or a CONNECT: a property of our own set on every request's socket
 * slowed every request by ~10 µs (Node's socket objects lost their fast property layout).
 */
const attachedResponse = (socket: Socket): ServerResponse | undefined =>
  (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined;

function listenerAnswer(err: NodeJS.ErrnoException, headersTimeoutMs: number): { status: number; reason: string; errorKind: string; errorMessage: string } | undefined {
  const code = err.code ?? '';
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return { status: 408, reason: 'Request Timeout', errorKind: 'request_timeout', errorMessage: `request head not received within ${headersTimeoutMs} ms` };
  }
  if (code === 'HPE_HEADER_OVERFLOW') {
    return { status: 431, reason: 'Request Header Fields Too Large', errorKind: 'request_too_large', errorMessage: `request head exceeds the ${http.maxHeaderSize}-byte limit` };
  }
  if (code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW') {
    return { status: 413, reason: 'Payload Too Large', errorKind: 'request_too_large', errorMessage: 'request chunk extensions too large' };
  }
  // Any other parser error is a malformed request; socket errors (a reset) get no answer.
  if (code.startsWith('HPE_')) return { status: 400, reason: 'Bad Request', errorKind: 'invalid_request', errorMessage: `malformed HTTP request (${code})` };
  return undefined;
}

/**
 * Answer CONNECT (a client that takes the gateway for a forward proxy) with 405 and `allow`: it
 * never reaches a request handler, and without this Node drops the connection without a word. A
 * response still owed on the connection (a pipelined CONNECT) goes out first.
 */
export function refuseConnect(server: Server, allow: string, onAnswer?: (answer: ListenerAnswer) => void, requestIdOf?: (headers: IncomingHttpHeaders) => string): void {
  server.on('connect', (req: IncomingMessage, socket: Socket) => {
    const requestId = requestIdOf?.(req.headers) ?? randomUUID();
    socket.on('error', () => {});
    let answered = false;
    const answer = (): void => {
      if (answered) return;
      answered = true;
      socket.end(`HTTP/1.1 405 Method Not Allowed\r\nConnection: close\r\nContent-Length: 0\r\nAllow: ${allow}\r\n${REQUEST_ID_HEADER}: ${requestId}\r\n\r\n`);
    };
    const owed = attachedResponse(socket);
    if (owed !== undefined && !owed.writableFinished) owed.once('finish', answer).once('close', answer);
    else answer();
    onAnswer?.({
      status: 405,
      requestId,
      errorKind: 'method_not_allowed',
      errorMessage: `method CONNECT is not allowed: the gateway is not a forward proxy (${req.url ?? ''})`,
      remoteAddress: socket.remoteAddress,
      seconds: 0,
      method: 'CONNECT',
      headers: req.headers,
    });
  });
}

export async function listen(options: ListenOptions): Promise<Listener> {
  const requestTimeout = options.requestTimeoutMs ?? 0;
  const headersTimeout = requestTimeout > 0 ? Math.min(66_000, requestTimeout) : 66_000;
  const onAnswer = options.onListenerAnswer;
  const server = http.createServer({
    keepAliveTimeout: 65_000,
    headersTimeout,
    requestTimeout,
    // How often Node checks for expired requests: a timeout is enforced within this much.
    connectionsCheckingInterval: requestTimeout > 0 ? Math.min(30_000, Math.max(100, Math.floor(requestTimeout / 4))) : 30_000,
  }, options.handler);
  const tracker = trackRequests(server, { closing: options.closing, onCut: options.onCut });
  const bodyLimit = options.bodyLimitBytes ?? 0;
  if (bodyLimit > 0) {
    server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
      if (!declaresOverLimit(req.headers, bodyLimit)) res.writeContinue();
      server.emit('request', req, res);
    });
  }
  if (onAnswer !== undefined) {
    // Node's own answers, written the same way (only while no response has started on the
    // socket), plus a request id and a report; a socket error (a reset) is only closed.
    server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
      const answer = listenerAnswer(err, headersTimeout);
      const open = attachedResponse(socket);
      if (answer === undefined || !socket.writable || (open !== undefined && open.headersSent)) {
        socket.destroy();
        return;
      }
      const head = `HTTP/1.1 ${answer.status} ${answer.reason}\r\nConnection: close\r\nContent-Length: 0\r\n`;
      // A response still open on the socket (a body that stalled: 408) has its own request id,
      // and reports itself when it closes.
      if (open !== undefined) {
        socket.write(`${head}\r\n`);
        socket.destroySoon();
        return;
      }
      const requestId = randomUUID();
      socket.write(`${head}${REQUEST_ID_HEADER}: ${requestId}\r\n\r\n`);
      socket.destroySoon();
      // A connection that never sent a byte made no request. (The head timeout does not run on a
      // kept-alive connection between requests: only a partial head there gets this far.)
      if (socket.bytesRead === 0) return;
      onAnswer({ ...answer, requestId, remoteAddress: socket.remoteAddress, seconds: answer.status === 408 ? headersTimeout / 1000 : 0 });
    });
  }
  refuseConnect(server, options.methods ?? 'GET, HEAD', onAnswer, options.requestIdOf);
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
    inFlight: tracker.inFlight,
    drain: tracker.drain,
  };
}
