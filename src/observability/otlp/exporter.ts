// One `otlp_http` observability exporter: usage events as spans, POSTed as OTLP/HTTP protobuf.
// Emitting encodes the event's span into the export body being filled (bounded; overflow is
// dropped and counted). Full batches leave at once, a partial one on the flush timer, one
// request at a time. Delivery (spec 2 §6.2): 2xx delivered; 408, 429,
// 5xx and transport failures retried with exponential backoff (Retry-After honoured) within a
// five-minute budget per batch; any other 4xx drops the batch at once. Every dropped event is
// counted in tollgate_otlp_fanout_drops_total{exporter,reason}.
//
// Closing (a reload that changes or removes the exporter, shutdown) gives the queue one delivery
// attempt within a grace period; then the export in flight is aborted, what is still queued is
// dropped as `exporter_closed` and the exporter's connections are destroyed, so a collector that
// never answers cannot keep a removed exporter alive for a request timeout per queued batch.
//
// An exporter with `content_mode: full` (contentMaxBytes > 0) also gets the request's captured
// content, trimmed to its own cap, as span attributes (never inside the usage event); queued
// bytes are bounded and batches are cut by size.
import type { UsageEvent, UsageRequest, UsageSink } from '../usage-events.ts';
import { trimContent, type CapturedContent } from '../content-text.ts';
import type { Agent as HttpAgent, ClientRequest } from 'node:http';
import { http, https } from '../../http/node-http.ts';
import { putVarint, varintLength } from '../../lib/proto-bytes.ts';
import { encodeUsageEventSpan, ExportFrame, SCOPE_SPANS_SPAN } from './span.ts';

export type DropReason = 'permanent_error' | 'retry_budget_exhausted' | 'queue_full' | 'exporter_closed';

export interface OtlpExporterConfig {
  name: string;
  endpoint: string;
  headers: Readonly<Record<string, string>>;
  /** 0..1; events are sampled per request id, so a request's rows stay together. */
  sampleRate: number;
  /** `content_mode: full`: the exporter's `content_max_bytes`; 0 or absent = metadata_only. */
  contentMaxBytes?: number;
}

export interface OtlpExporterHooks {
  exported(exporter: string, events: number): void;
  dropped(exporter: string, reason: DropReason, events: number): void;
  /** A delivery problem worth a log line (never carries the exporter's headers). */
  warn(exporter: string, message: string, detail: Record<string, unknown>): void;
}

export interface OtlpExporterTuning {
  batchSize: number;
  flushMs: number;
  maxQueue: number;
  retryBudgetMs: number;
  initialBackoffMs: number;
  maxBackoffMs: number;
  requestTimeoutMs: number;
  /** Encoded spans held in the queue (bytes); an event over it is dropped as queue_full. */
  maxQueuedBytes: number;
  /** A batch is cut once its body reaches this (bytes), so exports stay a sane size. */
  maxBatchBytes: number;
}

export const DEFAULT_TUNING: OtlpExporterTuning = {
  batchSize: 512,
  flushMs: 1000,
  maxQueue: 8192,
  retryBudgetMs: 5 * 60 * 1000,
  initialBackoffMs: 1000,
  maxBackoffMs: 30_000,
  requestTimeoutMs: 10_000,
  maxQueuedBytes: 64 * 1024 * 1024,
  maxBatchBytes: 4 * 1024 * 1024,
};

/** Statuses worth another try: the collector is busy or failing, not refusing the payload. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** FNV-1a of the request id, in [0, 1): the same id always samples the same way. */
function sampleKey(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    h ^= id.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) / 0x1_0000_0000;
}

/** Retry-After as milliseconds (seconds or an HTTP date), capped by the caller. */
function retryAfterMs(header: string | null, now: number): number | undefined {
  if (header === null) return undefined;
  const s = Number(header);
  if (Number.isFinite(s) && s >= 0) return s * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** Waits `ms`, or less when `signal` aborts first. */
const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    timer.unref();
    signal.addEventListener('abort', done, { once: true });
  });

/** `permanent`: the request could not even be made (headers Node refuses): no retry can help. */
type PostResult = { ok: true; status: number; retryAfter: string | null } | { ok: false; error: string; permanent?: true };

/**
 * POST one export body; the answer's status (its body is read and discarded), or why there was
 * none. Settles once the request is closed, so the body's buffer is no longer being sent and can
 * be filled again (a collector may answer before it has read the whole body).
 */
function post(url: URL, agent: HttpAgent, headers: Record<string, string>, body: Buffer, timeoutMs: number, signal: AbortSignal): Promise<PostResult> {
  return new Promise((resolve) => {
    let result: PostResult | undefined;
    const finish = (r: PostResult): void => {
      result ??= r;
    };
    let req: ClientRequest;
    try {
      req = (url.protocol === 'https:' ? https : http).request(url, {
        method: 'POST',
        headers: { ...headers, 'content-length': String(body.length) },
        agent,
      });
    } catch (err) {
      // The resource loader refuses such headers; the code (never a header's value) says why.
      resolve({ ok: false, error: `request not sent (${(err as NodeJS.ErrnoException).code ?? 'invalid request'})`, permanent: true });
      return;
    }
    const timer = setTimeout(() => {
      finish({ ok: false, error: 'request timed out' });
      req.destroy();
    }, timeoutMs);
    timer.unref();
    const abort = (): void => {
      finish({ ok: false, error: 'aborted' });
      req.destroy();
    };
    if (signal.aborted) abort();
    else signal.addEventListener('abort', abort, { once: true });
    req.once('response', (res) => {
      const retryAfter = res.headers['retry-after'];
      res.resume();
      res.once('end', () => finish({ ok: true, status: res.statusCode ?? 0, retryAfter: typeof retryAfter === 'string' ? retryAfter : null }));
      res.once('error', () => finish({ ok: true, status: res.statusCode ?? 0, retryAfter: null }));
    });
    req.once('error', () => finish({ ok: false, error: 'transport error' }));
    req.once('close', () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', abort);
      resolve(result ?? { ok: false, error: 'transport error' });
    });
    req.end(body);
  });
}

/**
 * One export request's body, filled as events are queued: room for the ExportTraceServiceRequest's
 * head, then each span (its key, length and bytes), encoded into one buffer at once. Nothing of a
 * queued event stays on the JavaScript heap (no event object, no span copy, no joined body) to be
 * copied and promoted by the garbage collector while the batch fills, and the body is sent without
 * a copy.
 */
class BatchBody {
  count = 0;
  /** The buffer being filled; handed back to the exporter's spares once the batch is delivered. */
  buf: Buffer;
  private used: number;
  private readonly frame: ExportFrame;
  /** Where the spans start: the head is written in front of them when the batch is sealed. */
  private readonly spansAt: number;

  constructor(frame: ExportFrame, buf: Buffer) {
    this.buf = buf;
    this.frame = frame;
    this.spansAt = frame.maxHeadBytes;
    this.used = this.spansAt;
  }

  /** Bytes of the spans so far. */
  get size(): number {
    return this.used - this.spansAt;
  }

  /** Append one encoded span (its key and length, then its bytes); returns the bytes it took. */
  add(span: Uint8Array): number {
    const before = this.used;
    const need = this.used + 1 + varintLength(span.length) + span.length;
    if (need > this.buf.length) {
      const grown = Buffer.allocUnsafe(Math.max(need, this.buf.length * 2));
      this.buf.copy(grown, 0, 0, this.used);
      this.buf = grown;
    }
    this.buf[this.used] = SCOPE_SPANS_SPAN;
    this.used = putVarint(this.buf, this.used + 1, span.length);
    this.buf.set(span, this.used);
    this.used += span.length;
    this.count++;
    return this.used - before;
  }

  /** Write the head in front of the spans; the body to POST. */
  seal(): Buffer {
    const start = this.frame.writeHead(this.buf, this.spansAt, this.size);
    return this.buf.subarray(start, this.used);
  }
}

interface SealedBatch {
  body: Buffer;
  count: number;
  /** The whole buffer `body` is a view of, reused once the batch is delivered or dropped. */
  store: Buffer;
}

/** Delivered batches' buffers kept for the next ones (two: one filling while one is in flight). */
const MAX_SPARE_BUFFERS = 2;

export class OtlpHttpExporter {
  readonly config: OtlpExporterConfig;
  private readonly hooks: OtlpExporterHooks;
  private readonly tuning: OtlpExporterTuning;
  private readonly frame: ExportFrame;
  /** The batch being filled, and the full (or flushed) ones waiting to be sent, oldest first. */
  private open: BatchBody | undefined;
  private readonly sealed: SealedBatch[] = [];
  private queuedEvents = 0;
  private queuedBytes = 0;
  /** Capacity of the next batch buffer: about the size of the last full one, so it rarely grows. */
  private nextCapacity = 64 * 1024;
  /**
   * Buffers of delivered batches, filled again: a new megabyte buffer per batch would be external
   * memory the garbage collector counts against the heap, and under load it ran a full
   * mark-compact about every second for it.
   */
  private readonly spare: Buffer[] = [];
  private sending: Promise<void> | undefined;
  private closed = false;
  /** Aborted when the close grace runs out: ends the export in flight and the delivery loop. */
  private readonly stop = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private readonly endpoint: URL;
  /**
   * The exporter's own keep-alive pool (a batch every second should not cost a handshake), one
   * socket as it sends one request at a time; destroyed on close, so a removed exporter leaves no
   * connection to its collector behind.
   */
  private readonly agent: HttpAgent;

  constructor(config: OtlpExporterConfig, hooks: OtlpExporterHooks, tuning: Partial<OtlpExporterTuning> = {}, serviceVersion = '0') {
    this.config = config;
    this.endpoint = new URL(config.endpoint);
    this.agent = new (this.endpoint.protocol === 'https:' ? https : http).Agent({ keepAlive: true, maxSockets: 1 });
    this.hooks = hooks;
    this.tuning = { ...DEFAULT_TUNING, ...tuning };
    this.frame = new ExportFrame('tollgate', serviceVersion);
    this.timer = setInterval(() => this.kick(), this.tuning.flushMs);
    this.timer.unref();
  }

  /** Queue `event` as a span; `content` (the request's captured text) is exported only in full mode. */
  emit(event: UsageEvent, content?: CapturedContent): void {
    const rate = this.config.sampleRate;
    if (rate < 1 && (rate <= 0 || sampleKey(event.request_id) >= rate)) return;
    // After close (shutdown, or a reload that replaced this exporter while the set still hands it
    // a request's rows) nothing is sent any more: counted like the queue close dropped.
    if (this.closed) {
      this.hooks.dropped(this.config.name, 'exporter_closed', 1);
      return;
    }
    if (this.queuedEvents >= this.tuning.maxQueue) {
      this.hooks.dropped(this.config.name, 'queue_full', 1);
      return;
    }
    const max = this.config.contentMaxBytes ?? 0;
    // A view of the encoder's buffer, copied into the batch before the next event is encoded.
    const span = encodeUsageEventSpan(event, max > 0 && content !== undefined ? trimContent(content, max) : undefined);
    if (this.queuedBytes + span.length > this.tuning.maxQueuedBytes) {
      this.hooks.dropped(this.config.name, 'queue_full', 1);
      return;
    }
    if (this.open !== undefined && this.open.size + span.length > this.tuning.maxBatchBytes) {
      this.seal();
      void this.start();
    }
    if (this.open === undefined) {
      this.open = new BatchBody(this.frame, this.batchBuffer());
    }
    this.queuedBytes += this.open.add(span);
    this.queuedEvents++;
    if (this.open.count >= this.tuning.batchSize || this.open.size >= this.tuning.maxBatchBytes) {
      this.seal();
      void this.start();
    }
  }

  /** Events queued and not yet handed to a request. */
  get queued(): number {
    return this.queuedEvents;
  }

  /** Bytes of the export bodies queued and not yet handed to a request. */
  get queuedBodyBytes(): number {
    return this.queuedBytes;
  }

  /**
   * Send everything queued, the partial batch included (the flush timer, close); returns the
   * running delivery loop. Events queued after this wait for the next flush or a full batch: under
   * steady load, sending whatever queued during each export's round trip would cut batches to a
   * few dozen events, and each export costs the event loop ~300 µs.
   */
  kick(): Promise<void> {
    if (this.open !== undefined) this.seal();
    return this.start();
  }

  /**
   * Stop taking events; deliver what is queued, waiting at most `graceMs`. Then abort the export
   * in flight, drop what is left (`exporter_closed`) and destroy the exporter's connections.
   */
  async close(graceMs = 2000): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    const delivering = this.kick();
    let grace: NodeJS.Timeout | undefined;
    await Promise.race([delivering, new Promise<void>((resolve) => (grace = setTimeout(resolve, graceMs)))]);
    clearTimeout(grace);
    this.stop.abort();
    await this.start();
    this.agent.destroy();
  }

  private seal(): void {
    const open = this.open!;
    this.open = undefined;
    const spans = open.size;
    const body = open.seal();
    // The head, now written: the queued bytes are the body's.
    this.queuedBytes += body.length - spans;
    this.sealed.push({ body, count: open.count, store: open.buf });
    if (open.count >= this.tuning.batchSize) this.nextCapacity = Math.ceil(body.length * 1.1);
  }

  /** A buffer for the next batch: a spare one big enough, else a new one. */
  private batchBuffer(): Buffer {
    const min = this.frame.maxHeadBytes + 4096;
    for (let spare = this.spare.pop(); spare !== undefined; spare = this.spare.pop()) {
      if (spare.length >= Math.max(min, this.nextCapacity)) return spare;
    }
    return Buffer.allocUnsafe(Math.max(min, this.nextCapacity));
  }

  /** Start the delivery loop if it is not running. */
  private start(): Promise<void> {
    if (this.sending === undefined && this.sealed.length > 0) {
      this.sending = this.drain().finally(() => {
        this.sending = undefined;
      });
    }
    return this.sending ?? Promise.resolve();
  }

  /** Deliver the sealed batches, one request at a time. */
  private async drain(): Promise<void> {
    for (let batch = this.sealed.shift(); batch !== undefined; batch = this.sealed.shift()) {
      this.queuedEvents -= batch.count;
      this.queuedBytes -= batch.body.length;
      if (this.stop.signal.aborted) this.hooks.dropped(this.config.name, 'exporter_closed', batch.count);
      else {
        try {
          await this.deliver(batch);
        } catch (err) {
          // Never an unhandled rejection (it would end the process): the batch is lost, counted.
          this.hooks.dropped(this.config.name, 'permanent_error', batch.count);
          this.hooks.warn(this.config.name, 'otlp export failed: batch dropped', { error: err instanceof Error ? err.message : String(err), events: batch.count });
        }
      }
      if (this.spare.length < MAX_SPARE_BUFFERS) this.spare.push(batch.store);
    }
  }

  private async deliver({ body, count }: SealedBatch): Promise<void> {
    const name = this.config.name;
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      if (this.stop.signal.aborted) {
        this.hooks.dropped(name, 'exporter_closed', count);
        return;
      }
      const sent = await post(this.endpoint, this.agent, { ...this.config.headers, 'content-type': 'application/x-protobuf' }, body, this.tuning.requestTimeoutMs, this.stop.signal);
      const status = sent.ok ? sent.status : undefined;
      const retryAfter = sent.ok ? sent.retryAfter : null;
      const failure = sent.ok ? undefined : sent.error;
      if (status !== undefined && status >= 200 && status < 300) {
        this.hooks.exported(name, count);
        return;
      }
      if (!sent.ok && sent.permanent === true) {
        this.hooks.dropped(name, 'permanent_error', count);
        this.hooks.warn(name, 'otlp export could not be sent: batch dropped', { error: failure, events: count });
        return;
      }
      if (status !== undefined && !isRetryableStatus(status)) {
        this.hooks.dropped(name, 'permanent_error', count);
        this.hooks.warn(name, 'otlp export refused: batch dropped', { status, events: count });
        return;
      }
      const backoff = Math.min(this.tuning.maxBackoffMs, this.tuning.initialBackoffMs * 2 ** (attempt - 1));
      const jittered = backoff / 2 + Math.random() * (backoff / 2);
      const now = Date.now();
      // A collector's Retry-After is waited for in full, past the backoff's cap too (the budget
      // still bounds it); one shorter than the backoff, 0 included, does not hurry the retry.
      const delay = Math.max(jittered, retryAfterMs(retryAfter, now) ?? 0);
      if (this.closed) {
        // Closing gives each batch one attempt; the budget is not what ran out.
        this.hooks.dropped(name, 'exporter_closed', count);
        this.hooks.warn(name, 'otlp exporter closed: undelivered batch dropped', { status, error: failure, attempts: attempt, events: count });
        return;
      }
      if (now + delay - started > this.tuning.retryBudgetMs) {
        this.hooks.dropped(name, 'retry_budget_exhausted', count);
        this.hooks.warn(name, 'otlp export kept failing: batch dropped', { status, error: failure, attempts: attempt, events: count });
        return;
      }
      await sleep(delay, this.stop.signal);
    }
  }
}

/**
 * The running otlp_http exporters, reconciled with the resources on every apply: an unchanged
 * exporter keeps its queue, a changed or removed one is flushed and closed.
 */
export class OtlpExporterSet implements UsageSink {
  private readonly hooks: OtlpExporterHooks;
  private readonly tuning: Partial<OtlpExporterTuning>;
  private readonly version: string;
  private running = new Map<string, { key: string; exporter: OtlpHttpExporter }>();
  private list: OtlpHttpExporter[] = [];
  /** Exporters an update removed or replaced, still in their close grace: shutdown waits for them. */
  private readonly retiring = new Set<Promise<void>>();
  /** The largest content_max_bytes of the full-mode exporters; 0 when none. */
  private captureLimit = 0;

  constructor(hooks: OtlpExporterHooks, tuning: Partial<OtlpExporterTuning> = {}, version = '0') {
    this.hooks = hooks;
    this.tuning = tuning;
    this.version = version;
  }

  update(configs: readonly OtlpExporterConfig[]): void {
    const next = new Map<string, { key: string; exporter: OtlpHttpExporter }>();
    for (const c of configs) {
      const key = JSON.stringify([c.endpoint, c.headers, c.sampleRate, c.contentMaxBytes ?? 0]);
      const old = this.running.get(c.name);
      next.set(c.name, old !== undefined && old.key === key ? old : { key, exporter: new OtlpHttpExporter(c, this.hooks, this.tuning, this.version) });
    }
    for (const [name, old] of this.running) {
      if (next.get(name) !== old) this.retire(old.exporter);
    }
    this.running = next;
    this.list = [...next.values()].map((v) => v.exporter);
    this.captureLimit = Math.max(0, ...this.list.map((e) => e.config.contentMaxBytes ?? 0));
  }

  /** Bytes of content to capture per request: the largest cap of a full-mode exporter, 0 = none. */
  contentCapture(): number {
    return this.captureLimit;
  }

  get size(): number {
    return this.list.length;
  }

  emit(event: UsageEvent, req?: UsageRequest): void {
    // The captured strings are built once per request, only when some exporter takes them.
    const content = this.captureLimit > 0 ? req?.content?.content() : undefined;
    for (const e of this.list) e.emit(event, content);
  }

  /** Close the running exporters, and wait for the ones updates retired to finish closing. */
  async close(graceMs = 2000): Promise<void> {
    await Promise.all([...this.list.map((e) => e.close(graceMs)), ...this.retiring]);
  }

  private retire(exporter: OtlpHttpExporter): void {
    const closing: Promise<void> = exporter.close().finally(() => this.retiring.delete(closing));
    this.retiring.add(closing);
  }
}
