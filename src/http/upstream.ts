// The upstream HTTP client: keep-alive connection pools per origin (undici's `dispatch`, chosen by
// benchmark over node:http; see docs/adr/0004), connect and response-head timeouts, and
// failures returned as values rather than thrown. A response is an `UpstreamResponse`: the few
// IncomingMessage members the relays use (status, headers, data/end/error/close events,
// pause/resume/destroy) without a stream object per response.
import { EventEmitter } from 'node:events';
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import { createHash } from 'node:crypto';
import { rootCertificates } from 'node:tls';
import type { Transform } from 'node:stream';
import type { Agent as UndiciAgent, buildConnector as BuildConnector, Dispatcher } from 'undici';
// The package index also loads fetch, WebSocket, the cache layers and their web-stream plumbing
// (~4 MiB of a started gateway's resident memory) that the proxy never uses. These three modules
// are all it needs.
import Agent from 'undici/lib/dispatcher/agent.js';
import buildConnector from 'undici/lib/core/connect.js';
import errors from 'undici/lib/core/errors.js';
import { decompressor } from '../lib/content-coding.ts';

/** TLS settings of a set of pools: certificate verification and an extra trusted CA bundle. */
export interface UpstreamTlsOptions {
  readonly verify: boolean;
  readonly caCert?: string;
}

/**
 * The connection pools of one TLS setting (undici keeps one pool per origin inside). One set per
 * distinct setting and connect timeout, made once and shared by every endpoint that uses it.
 */
export class UpstreamPools {
  readonly tls: UpstreamTlsOptions | undefined;
  private readonly byTimeout = new Map<number, UndiciAgent>();
  private last: UndiciAgent | undefined;
  private lastTimeout = -1;

  constructor(tls?: UpstreamTlsOptions) {
    this.tls = tls;
  }

  /** The dispatcher whose new connections are bounded by `connectTimeoutMs` (0 = no bound). */
  dispatcher(connectTimeoutMs: number): UndiciAgent {
    if (connectTimeoutMs === this.lastTimeout) return this.last!;
    let agent = this.byTimeout.get(connectTimeoutMs);
    if (agent === undefined) {
      const options: BuildConnector.BuildOptions = {};
      if (this.tls !== undefined) {
        options.rejectUnauthorized = this.tls.verify;
        // The bundle is trusted in addition to the public roots.
        if (this.tls.caCert !== undefined) options.ca = [...rootCertificates, this.tls.caCert];
      }
      // Timeouts are the gateway's own (connect, head, body, stream idle): undici's are off.
      agent = new Agent({ connect: timedConnector(options, connectTimeoutMs), headersTimeout: 0, bodyTimeout: 0, keepAliveTimeout: 4_000 });
      this.byTimeout.set(connectTimeoutMs, agent);
    }
    this.last = agent;
    this.lastTimeout = connectTimeoutMs;
    return agent;
  }

  close(): void {
    for (const agent of this.byTimeout.values()) void agent.destroy().catch(() => {});
    this.byTimeout.clear();
    this.last = undefined;
    this.lastTimeout = -1;
  }
}

/**
 * undici's connector with the connect bound on a plain timer: undici's own connect timeout runs
 * on its coarse shared clock (up to ~1 s late), too loose for `connect_timeout_ms`.
 */
function timedConnector(options: BuildConnector.BuildOptions, timeoutMs: number): BuildConnector.connector {
  const connect = buildConnector({ ...options, timeout: 0 });
  return (opts, callback) => {
    // undici's connector returns the socket, though its type says void.
    const timer = timeoutMs > 0 ? setTimeout(() => socket?.destroy(new errors.ConnectTimeoutError()), timeoutMs) : undefined;
    const socket = connect(opts, (err, connected) => {
      if (timer !== undefined) clearTimeout(timer);
      if (err !== null || connected === null) {
        callback(err ?? new Error('no socket'), null);
        return;
      }
      // Ahead of undici's own listener, which hands the error on to the request.
      connected.prependListener('error', noteBytesRead);
      callback(null, connected);
    }) as unknown as { destroy(err: Error): void } | undefined;
  };
}

const BYTES_READ = Symbol('bytesRead');

/** A socket error remembers how much its connection had read: >0 means it had served a response. */
function noteBytesRead(this: { bytesRead: number }, err: Error): void {
  (err as { [BYTES_READ]?: number })[BYTES_READ] ??= this.bytesRead;
}

/** Connection-level failures: the peer closed or reset the connection. */
const CLOSED_CODES: ReadonlySet<string | undefined> = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET']);

/**
 * The connection closed under a request that had no byte of its response yet, and had served an
 * earlier response: a kept-alive connection the upstream closed as idle just as the request went
 * out (its keep-alive timeout is shorter than the pool's, and it does not announce it). The
 * upstream dropped the request unread, so sending it again is safe.
 */
function closedWhileIdle(err: Error & { code?: string; socket?: { bytesRead?: number }; [BYTES_READ]?: number }): boolean {
  if (!CLOSED_CODES.has(err.code)) return false;
  const read = err.socket?.bytesRead ?? err[BYTES_READ];
  return read !== undefined && read > 0;
}

const poolSets = new Map<string, UpstreamPools>();

/** The shared pools of a TLS setting (`undefined` = default verification, public roots). */
export function upstreamPools(tls?: UpstreamTlsOptions): UpstreamPools {
  const id = tls === undefined ? 'default' : `${tls.verify}|${tls.caCert === undefined ? '' : createHash('sha256').update(tls.caCert).digest('hex')}`;
  let pools = poolSets.get(id);
  if (pools === undefined) {
    pools = new UpstreamPools(tls);
    poolSets.set(id, pools);
  }
  return pools;
}

export interface UpstreamEndpoint {
  readonly origin: string;
  readonly protocol: 'http:' | 'https:';
  readonly hostname: string;
  readonly port: number;
  readonly path: string;
  readonly pools: UpstreamPools;
}

/** `decode`: the body did not decode from its content-encoding (the upstream's bytes, not the connection). */
export type UpstreamFailureKind = 'timeout' | 'transport' | 'aborted' | 'decode';

export interface UpstreamFailure {
  ok: false;
  kind: UpstreamFailureKind;
  message: string;
}

export interface UpstreamSuccess {
  ok: true;
  response: UpstreamResponse;
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
  /**
   * Send the request again, once, when a kept-alive connection the upstream had closed as idle
   * fails it before any byte of the response (`closedWhileIdle`). Off for callers that promise
   * exactly one upstream request per call (pass-through routes, spec 3 rule 3).
   */
  resendOnStaleConnection?: boolean;
}

export interface CancelSource {
  onCancel(fn: () => void): () => void;
}

/** Precompile a URL into request options; done once per snapshot, not per request. */
export function compileEndpoint(url: string, pools: UpstreamPools = upstreamPools()): UpstreamEndpoint {
  const u = new URL(url);
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`unsupported upstream scheme in ${u.origin}`);
  const secure = u.protocol === 'https:';
  return {
    origin: u.origin,
    protocol: u.protocol,
    hostname: u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname,
    port: u.port === '' ? (secure ? 443 : 80) : Number(u.port),
    path: u.pathname + u.search,
    pools,
  };
}

/** Close every pooled connection (shutdown). */
export function closeUpstreamPools(): void {
  for (const pools of poolSets.values()) pools.close();
  poolSets.clear();
}

/** Headers whose repeats Node's IncomingMessage drops (the first value wins). */
const SINGLE_VALUED = new Set(['content-type', 'content-length', 'user-agent', 'referer', 'host', 'authorization', 'proxy-authorization', 'if-modified-since', 'if-unmodified-since', 'from', 'location', 'max-forwards', 'retry-after', 'etag', 'last-modified', 'server', 'age', 'expires']);

/**
 * An upstream response: status, headers and a body delivered as `data` events, then `end` (or
 * `error`), then `close`. Body chunks that arrive before a `data` listener is attached are
 * kept and delivered once one is (after the current tick, as a Readable does). `pause` stops
 * reading from the connection until `resume`.
 */
export class UpstreamResponse extends EventEmitter {
  readonly statusCode: number;
  readonly statusMessage: string;
  readonly headers: IncomingHttpHeaders;
  /** The whole body arrived. */
  complete = false;
  private readonly controller: Dispatcher.DispatchController;
  private raw: string[] | undefined;
  private pending: Buffer[] = [];
  private flowing = false;
  private paused = false;
  private scheduled = false;
  private ended = false;
  private failure: Error | undefined;
  private closed = false;
  private destroyedByUs = false;
  /** Decodes a compressed body on its way to the listeners (`decodeBody`). */
  private decoder: Transform | undefined;
  /**
   * Why the body failed to decode from its content-encoding, when it did: the failure then is the
   * upstream's bytes, not the connection (error_kind `upstream_decode`, not `transport`).
   */
  undecodable: string | undefined;

  constructor(controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>, statusMessage: string | undefined) {
    super();
    this.controller = controller;
    this.statusCode = statusCode;
    this.statusMessage = statusMessage ?? '';
    for (const name in headers) {
      const v = headers[name];
      if (Array.isArray(v) && name !== 'set-cookie') headers[name] = SINGLE_VALUED.has(name) ? v[0] : v.join(', ');
    }
    this.headers = headers as IncomingHttpHeaders;
  }

  /** A `data` listener starts the flow, as on a Readable (held chunks follow after this tick). */
  override on(event: string | symbol, listener: Parameters<EventEmitter['on']>[1]): this {
    super.on(event, listener);
    if (event === 'data' && !this.flowing) {
      this.flowing = true;
      this.schedule();
    }
    return this;
  }

  /** Header names and values alternating, as IncomingMessage#rawHeaders (names lowercase). */
  get rawHeaders(): string[] {
    if (this.raw === undefined) {
      const raw: string[] = [];
      for (const name in this.headers) {
        const v = this.headers[name];
        if (Array.isArray(v)) for (const x of v) raw.push(name, x);
        else if (v !== undefined) raw.push(name, v);
      }
      this.raw = raw;
    }
    return this.raw;
  }

  get destroyed(): boolean {
    return this.closed;
  }

  pause(): this {
    if (!this.paused) {
      this.paused = true;
      this.controller.pause();
    }
    return this;
  }

  resume(): this {
    this.flowing = true;
    if (this.paused) {
      this.paused = false;
      this.controller.resume();
    }
    this.schedule();
    return this;
  }

  /**
   * Deliver the body decoded from its `content-encoding` (gzip, deflate, br, zstd), for a reader
   * of its text; the encoding and length headers go. False, and nothing changed, for an encoding
   * it cannot decode. A body that does not decode fails as a broken connection would, with
   * `undecodable` set, and the exchange is ended (the upstream is not left sending the rest).
   */
  decodeBody(): boolean {
    const header = this.headers['content-encoding'];
    if (header === undefined) return true;
    const encoding = header.trim().toLowerCase();
    if (encoding === '' || encoding === 'identity') return true;
    const decoder = decompressor(encoding);
    if (decoder === undefined) return false;
    delete this.headers['content-encoding'];
    delete this.headers['content-length'];
    this.raw = undefined;
    this.decoder = decoder;
    decoder.on('data', (data: Buffer) => this.deliver(data));
    decoder.once('end', () => {
      this.ended = true;
      this.drain();
    });
    decoder.once('error', (err) => {
      this.undecodable = `upstream body is not valid ${encoding}`;
      this.fail(err);
      // Unlike a broken connection, this one still carries the rest of the body, which nobody will
      // read: end the exchange, or an upstream stream keeps its connection until the upstream ends.
      if (!this.complete) this.controller.abort(err);
    });
    // What arrived before is still encoded.
    const held = this.pending;
    this.pending = [];
    for (const data of held) decoder.write(data);
    if (this.ended) {
      this.ended = false;
      decoder.end();
    }
    return true;
  }

  /** Stop the exchange; the connection is not reused. Emits only `close` from here on. */
  destroy(): this {
    if (this.closed) return this;
    this.destroyedByUs = true;
    this.decoder?.destroy();
    this.pending = [];
    if (!this.complete) this.controller.abort(new Error('upstream response discarded'));
    this.finish();
    return this;
  }

  /** @internal a body chunk from the connection. */
  chunk(data: Buffer): void {
    if (this.destroyedByUs) return;
    if (this.decoder !== undefined) this.decoder.write(data);
    else this.deliver(data);
  }

  private deliver(data: Buffer): void {
    if (this.closed) return;
    if (this.flowing && !this.paused && this.pending.length === 0) this.emit('data', data);
    else this.pending.push(data);
  }

  /** @internal the body ended. */
  end(): void {
    this.complete = true;
    if (this.decoder !== undefined) {
      this.decoder.end();
      return;
    }
    this.ended = true;
    this.drain();
  }

  /** @internal the connection failed mid-body. */
  fail(err: Error): void {
    if (this.destroyedByUs || this.closed) return;
    this.failure = err;
    this.decoder?.destroy();
    this.pending = [];
    this.emit('aborted');
    if (this.listenerCount('error') > 0) this.emit('error', err);
    this.finish();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      this.drain();
    });
  }

  private drain(): void {
    if (this.closed || !this.flowing) return;
    while (this.pending.length > 0 && !this.paused) this.emit('data', this.pending.shift());
    if (this.ended && this.pending.length === 0 && !this.paused) {
      this.ended = false;
      this.emit('end');
      this.finish();
    }
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.emit('close');
  }
}

class TimeoutSignal extends Error {}

/** Dispatch handler of one exchange: resolves once the head arrived (or it failed). */
class Exchange implements Dispatcher.DispatchHandler {
  private readonly call: UpstreamCall;
  private readonly resolve: (r: UpstreamResult) => void;
  private controller: Dispatcher.DispatchController | undefined;
  private response: UpstreamResponse | undefined;
  private settled = false;
  private abortWith: Error | undefined;
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  /** A byte of the response arrived (1xx heads included). */
  private started = false;
  /** Sent again once after its kept-alive connection was found closed. */
  private resent = false;

  constructor(call: UpstreamCall, resolve: (r: UpstreamResult) => void) {
    this.call = call;
    this.resolve = resolve;
    if (call.headersTimeoutMs > 0) {
      this.timer = setTimeout(() => this.stop(new TimeoutSignal(`upstream request timed out after ${call.headersTimeoutMs}ms`)), call.headersTimeoutMs);
    }
    if (call.cancel !== undefined) this.unsubscribe = call.cancel.onCancel(() => this.stop(new Error('client disconnected')));
  }

  /** Give up before the head: settle now, abort the request as soon as it has a controller. */
  private stop(err: Error): void {
    if (this.settled) return;
    if (err instanceof TimeoutSignal) this.settle({ ok: false, kind: 'timeout', message: err.message });
    else this.settle({ ok: false, kind: 'aborted', message: err.message });
    this.abortWith = err;
    this.controller?.abort(err);
  }

  private settle(result: UpstreamResult): void {
    if (this.settled) return;
    this.settled = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.unsubscribe?.();
    this.resolve(result);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.abortWith !== undefined) controller.abort(this.abortWith);
  }

  onResponseStarted(): void {
    this.started = true;
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>, statusMessage?: string): void {
    // 1xx informational heads are not the response.
    if (statusCode < 200 || this.settled) return;
    this.response = new UpstreamResponse(controller, statusCode, headers, statusMessage);
    this.settle({ ok: true, response: this.response });
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.response?.chunk(chunk);
  }

  onResponseEnd(): void {
    this.response?.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.failed(err);
  }

  /** The exchange failed: mid-body, or before the head (nothing for the caller to read). */
  failed(err: Error): void {
    if (this.response !== undefined) {
      this.response.fail(err);
      return;
    }
    if (this.call.resendOnStaleConnection === true && !this.settled && !this.started && !this.resent && closedWhileIdle(err)) {
      this.resent = true;
      this.controller = undefined;
      // Once undici has finished failing the request; another pooled or a new connection takes it.
      queueMicrotask(() => {
        if (!this.settled) send(this.call, this);
      });
      return;
    }
    const code = (err as { code?: string }).code;
    if (code === 'UND_ERR_CONNECT_TIMEOUT') {
      const { endpoint, connectTimeoutMs } = this.call;
      this.settle({ ok: false, kind: 'timeout', message: `connect to ${endpoint.origin} timed out after ${connectTimeoutMs}ms` });
    } else {
      this.settle({ ok: false, kind: 'transport', message: transportMessage(this.call.endpoint, err) });
    }
  }
}

export function callUpstream(call: UpstreamCall): Promise<UpstreamResult> {
  return new Promise((resolve) => send(call, new Exchange(call, resolve)));
}

function send(call: UpstreamCall, handler: Exchange): void {
  const headers: Record<string, string | string[]> = {};
  for (const name in call.headers) {
    const v = call.headers[name];
    // The gateway has the whole body already: nothing to wait for a 100 Continue about.
    if (v === undefined || name === 'expect') continue;
    headers[name] = typeof v === 'number' ? String(v) : v;
  }
  try {
    call.endpoint.pools.dispatcher(call.connectTimeoutMs).dispatch(
      { origin: call.endpoint.origin, path: call.endpoint.path, method: call.method as Dispatcher.HttpMethod, headers, body: call.body ?? null },
      handler,
    );
  } catch (err) {
    // Invalid request options (a header undici refuses): nothing was sent.
    handler.failed(err as Error);
  }
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
  response: UpstreamResponse,
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
    response.once('close', () => {
      if (response.undecodable !== undefined) done({ ok: false, kind: 'decode', message: response.undecodable });
      else done({ ok: false, kind: 'transport', message: 'upstream connection broke while sending the body' });
    });
  });
}
