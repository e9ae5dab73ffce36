// Scriptable mock upstream for e2e tests: a real node:http server on 127.0.0.1:0 that plays an
// LLM provider. It records every request, answers each one from a queue of scripted replies (then
// a fallback), and can misbehave on cue: slow headers, slow or cut SSE streams, connection resets,
// JSON bodies split across chunks. Helpers build OpenAI Chat Completions payloads in the exact
// wire shape the official SDK parses.

import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { randomBytes } from 'node:crypto';

export interface RecordedRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** The body parsed as JSON, when it is JSON. */
  json?: any;
  /** The client's port: the same on every request of one (keep-alive) connection. */
  remotePort: number | undefined;
}

/**
 * How to answer one request. Body kinds take precedence in this order:
 * `destroyBeforeHeaders`, `sse`, `chunks`, `json`, `body`; none of them means an empty body.
 */
export interface Reply {
  /** Default 200. */
  status?: number;
  /** Override the defaults (content-type etc.); names are case-insensitive. */
  headers?: Record<string, string>;
  /** JSON body, sent with content-type application/json and a content-length. */
  json?: unknown;
  /** Raw body, sent as given (no content-type unless `headers` sets one). */
  body?: string | Buffer;
  /** SSE: each object is written as `data: <JSON>\n\n`; a string is written exactly as given. */
  sse?: Array<string | object>;
  /** For `sse`: append `data: [DONE]\n\n` after the events (default true). */
  done?: boolean;
  /** Wait this long before writing the status line and headers (also before `destroyBeforeHeaders`). */
  delayHeadersMs?: number;
  /** For `sse`: wait this long after the headers before the first event. */
  delayFirstEventMs?: number;
  /** For `sse`: gap between consecutive events (and before `[DONE]`). */
  delayBetweenEventsMs?: number;
  /**
   * For `sse`: destroy the socket after this many scripted events (`[DONE]` is not counted and
   * never sent), leaving the chunked body unterminated. 0 cuts right after the headers.
   */
  disconnectAfterEvents?: number;
  /** Reset the connection (TCP RST) without answering. */
  destroyBeforeHeaders?: boolean;
  /** For `chunks`: gap between consecutive pieces. */
  chunkDelayMs?: number;
  /** Raw body written piece by piece (chunked encoding); content-type defaults to application/json. */
  chunks?: Array<string | Buffer>;
}

/** A fixed reply, or a function of the request and its index in `requests` (0-based since the last reset). */
export type Script = Reply | ((req: RecordedRequest, index: number) => Reply | Promise<Reply>);

export interface MockUpstream {
  /** http://127.0.0.1:<port> */
  url: string;
  port: number;
  /** Everything received, in order of fully received bodies. */
  requests: RecordedRequest[];
  /** Queue replies: each request consumes the next one; when the queue is empty the fallback answers. */
  script(...replies: Script[]): void;
  setFallback(s: Script): void;
  /** Requests since the last reset whose client went away before the reply finished (the mock's own cuts do not count). */
  readonly aborted: number;
  /** Resolve once at least n requests were recorded; reject after timeoutMs (default 5000). */
  waitForRequests(n: number, timeoutMs?: number): Promise<void>;
  /** Forget requests, queued replies and the abort count; restore the default fallback. */
  reset(): void;
  /** Stop listening and destroy every socket, idle keep-alive ones included. */
  close(): Promise<void>;
}

const defaultFallback: Script = (req) => ({
  json: chatCompletion({ model: typeof req.json?.model === 'string' ? req.json.model : undefined }),
});

export async function startMockUpstream(): Promise<MockUpstream> {
  const sockets = new Set<Socket>();
  const queue: Script[] = [];
  let fallback: Script = defaultFallback;
  let requests: RecordedRequest[] = [];
  let aborted = 0;
  // Bumped by reset: a request from before it that is cut later must not count against the next test.
  let generation = 0;
  let closing: Promise<void> | undefined;
  let waiters: Array<{ n: number; resolve: () => void }> = [];

  const server = http.createServer((req, res) => {
    // A destroyed response must not throw on late writes; the close handler below accounts for it.
    res.on('error', () => {});
    req.on('error', () => {});
    const state = { selfDestroyed: false };
    // The generation it counts in: the one it is recorded in once its body ends (a request whose
    // body ends after a reset is the new test's), else the one its head arrived in.
    let born = generation;
    res.on('close', () => {
      if (!res.writableFinished && !state.selfDestroyed && !closing && born === generation) aborted++;
    });

    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const body = Buffer.concat(parts).toString('utf8');
      const rec: RecordedRequest = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body, remotePort: req.socket.remotePort };
      if (body.length > 0) {
        try {
          rec.json = JSON.parse(body);
        } catch {
          // not JSON: `body` still holds it
        }
      }
      born = generation;
      const index = requests.length;
      requests.push(rec);
      const script = queue.length > 0 ? queue.shift()! : fallback;
      notifyWaiters();
      void answer(script, rec, index, res, state);
    });
  });

  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });

  function notifyWaiters(): void {
    const ready = waiters.filter((w) => requests.length >= w.n);
    waiters = waiters.filter((w) => requests.length < w.n);
    for (const w of ready) w.resolve();
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    get requests() {
      return requests;
    },
    get aborted() {
      return aborted;
    },
    script(...replies) {
      queue.push(...replies);
    },
    setFallback(s) {
      fallback = s;
    },
    waitForRequests(n, timeoutMs = 5000) {
      if (requests.length >= n) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters = waiters.filter((w) => w !== waiter);
          reject(new Error(`waitForRequests: wanted ${n} requests, got ${requests.length} after ${timeoutMs} ms`));
        }, timeoutMs);
        const waiter = {
          n,
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
        };
        waiters.push(waiter);
      });
    },
    reset() {
      requests = [];
      queue.length = 0;
      fallback = defaultFallback;
      aborted = 0;
      generation++;
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
      return closing;
    },
  };
}

/** Wait ms unless the response closes first; resolves true when the response is still writable. */
function pause(ms: number | undefined, res: http.ServerResponse): Promise<boolean> {
  if (res.destroyed) return Promise.resolve(false);
  if (!ms || ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onClose = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      res.off('close', onClose);
      resolve(!res.destroyed);
    }, ms);
    res.once('close', onClose);
  });
}

async function answer(
  script: Script,
  rec: RecordedRequest,
  index: number,
  res: http.ServerResponse,
  state: { selfDestroyed: boolean },
): Promise<void> {
  let reply: Reply;
  try {
    reply = typeof script === 'function' ? await script(rec, index) : script;
  } catch (err) {
    // A broken script should fail the test visibly, not hang it.
    if (!res.destroyed) {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`mock-upstream: script threw: ${err instanceof Error ? err.stack : String(err)}`);
    }
    return;
  }

  if (!(await pause(reply.delayHeadersMs, res))) return;

  if (reply.destroyBeforeHeaders) {
    state.selfDestroyed = true;
    res.socket?.resetAndDestroy();
    return;
  }

  const status = reply.status ?? 200;
  const setHeaders = (defaults: Record<string, string | number>) => {
    for (const [k, v] of Object.entries(defaults)) res.setHeader(k, v);
    for (const [k, v] of Object.entries(reply.headers ?? {})) res.setHeader(k, v);
    res.statusCode = status;
  };

  if (reply.sse) {
    setHeaders({ 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    res.flushHeaders();
    if (!(await pause(reply.delayFirstEventMs, res))) return;
    const events = reply.sse;
    const cutAt = reply.disconnectAfterEvents;
    for (let i = 0; i < events.length; i++) {
      if (cutAt !== undefined && i >= cutAt) break;
      if (i > 0 && !(await pause(reply.delayBetweenEventsMs, res))) return;
      const ev = events[i];
      res.write(typeof ev === 'string' ? ev : `data: ${JSON.stringify(ev)}\n\n`);
    }
    if (cutAt !== undefined) {
      state.selfDestroyed = true;
      // Let the written events reach the client before the cut.
      res.socket?.end(() => res.socket?.destroy());
      return;
    }
    if (reply.done ?? true) {
      if (events.length > 0 && !(await pause(reply.delayBetweenEventsMs, res))) return;
      res.write('data: [DONE]\n\n');
    }
    res.end();
    return;
  }

  if (reply.chunks) {
    setHeaders({ 'content-type': 'application/json' });
    res.flushHeaders();
    for (let i = 0; i < reply.chunks.length; i++) {
      if (i > 0 && !(await pause(reply.chunkDelayMs, res))) return;
      res.write(reply.chunks[i]);
    }
    res.end();
    return;
  }

  if (reply.json !== undefined) {
    const payload = Buffer.from(JSON.stringify(reply.json));
    setHeaders({ 'content-type': 'application/json', 'content-length': payload.length });
    res.end(payload);
    return;
  }

  const payload = reply.body === undefined ? Buffer.alloc(0) : Buffer.from(reply.body);
  setHeaders({ 'content-length': payload.length });
  res.end(payload);
}

// ---- OpenAI Chat Completions wire payloads ----

export interface MockUsage {
  prompt_tokens: number;
  completion_tokens: number;
}

const SYSTEM_FINGERPRINT = 'fp_mock0001';

function chatId(): string {
  return `chatcmpl-${randomBytes(15).toString('base64url')}`;
}

function wireUsage(u: MockUsage): object {
  return {
    prompt_tokens: u.prompt_tokens,
    completion_tokens: u.completion_tokens,
    total_tokens: u.prompt_tokens + u.completion_tokens,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

/** A non-streaming `chat.completion` object. With tool_calls, content is null and finish_reason defaults to "tool_calls". */
export function chatCompletion(
  opts: {
    model?: string;
    content?: string;
    usage?: MockUsage;
    tool_calls?: any[];
    finish_reason?: string;
    id?: string;
  } = {},
): object {
  const hasTools = opts.tool_calls !== undefined && opts.tool_calls.length > 0;
  const message: Record<string, unknown> = {
    role: 'assistant',
    content: hasTools && opts.content === undefined ? null : (opts.content ?? 'Hello from the mock upstream.'),
    refusal: null,
    annotations: [],
  };
  if (hasTools) message.tool_calls = opts.tool_calls;
  return {
    id: opts.id ?? chatId(),
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: opts.model ?? 'gpt-4o-mini',
    choices: [
      {
        index: 0,
        message,
        logprobs: null,
        finish_reason: opts.finish_reason ?? (hasTools ? 'tool_calls' : 'stop'),
      },
    ],
    usage: wireUsage(opts.usage ?? { prompt_tokens: 12, completion_tokens: 7 }),
    service_tier: 'default',
    system_fingerprint: SYSTEM_FINGERPRINT,
  };
}

/**
 * The `chat.completion.chunk` events of one streamed completion: a role chunk, one chunk per part,
 * a finish chunk and, when usage is given, a usage-only chunk with `choices: []` (as OpenAI sends
 * with `stream_options.include_usage`, where every other chunk then carries `usage: null`).
 */
export function chatChunks(
  opts: { model?: string; parts?: string[]; usage?: MockUsage | null; id?: string } = {},
): object[] {
  const id = opts.id ?? chatId();
  const created = Math.floor(Date.now() / 1000);
  const model = opts.model ?? 'gpt-4o-mini';
  const withUsage = opts.usage !== undefined && opts.usage !== null;
  const chunk = (delta: object, finish_reason: string | null): object => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    service_tier: 'default',
    system_fingerprint: SYSTEM_FINGERPRINT,
    choices: [{ index: 0, delta, logprobs: null, finish_reason }],
    ...(withUsage ? { usage: null } : {}),
  });
  const out: object[] = [chunk({ role: 'assistant', content: '', refusal: null }, null)];
  for (const part of opts.parts ?? ['Hello', ' from the', ' mock upstream.']) out.push(chunk({ content: part }, null));
  out.push(chunk({}, 'stop'));
  if (withUsage) {
    out.push({
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      service_tier: 'default',
      system_fingerprint: SYSTEM_FINGERPRINT,
      choices: [],
      usage: wireUsage(opts.usage!),
    });
  }
  return out;
}
