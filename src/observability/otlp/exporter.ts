// One `otlp_http` observability exporter: usage events as spans, POSTed as OTLP/HTTP JSON.
// Emitting only queues the event (bounded; overflow is dropped and counted). Batches leave on a
// timer or when full, one request at a time. Delivery (spec 2 §6.2): 2xx delivered; 408, 429,
// 5xx and transport failures retried with exponential backoff (Retry-After honoured) within a
// five-minute budget per batch; any other 4xx drops the batch at once. Every dropped event is
// counted in tollgate_otlp_fanout_drops_total{exporter,reason}.
//
// An exporter with `content_mode: full` (contentMaxBytes > 0) also gets the request's captured
// content, trimmed to its own cap, kept beside the queued event (never inside it); queued
// content is bounded in size and batches are cut by content size.
import type { UsageEvent, UsageRequest, UsageSink } from '../usage-events.ts';
import { trimContent, type CapturedContent } from '../content-text.ts';
import http from 'node:http';
import https from 'node:https';
import { exportRequestJson, usageEventSpanJson } from './span.ts';

export type DropReason = 'permanent_error' | 'retry_budget_exhausted' | 'queue_full';

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
  /** Captured content held in the queue (UTF-16 units); an event over it is dropped as queue_full. */
  maxQueuedContent: number;
  /** A batch is cut once its content reaches this (UTF-16 units), so exports stay a sane size. */
  maxBatchContent: number;
}

export const DEFAULT_TUNING: OtlpExporterTuning = {
  batchSize: 512,
  flushMs: 1000,
  maxQueue: 8192,
  retryBudgetMs: 5 * 60 * 1000,
  initialBackoffMs: 1000,
  maxBackoffMs: 30_000,
  requestTimeoutMs: 10_000,
  maxQueuedContent: 64 * 1024 * 1024,
  maxBatchContent: 4 * 1024 * 1024,
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

const sleep = (ms: number): Promise<void> =>
  new Promise((resolve) => {
    setTimeout(resolve, ms).unref();
  });

const contentSize = (c: CapturedContent): number => c.request.length + c.response.length;

/** Keep-alive pools for the collectors: a batch every second should not cost a handshake. */
const AGENTS = {
  'http:': new http.Agent({ keepAlive: true, maxSockets: 4 }),
  'https:': new https.Agent({ keepAlive: true, maxSockets: 4 }),
};

type PostResult = { ok: true; status: number; retryAfter: string | null } | { ok: false; error: string };

/** POST one export body; the answer's status (its body is read and discarded), or why there was none. */
function post(url: URL, headers: Record<string, string>, body: Buffer, timeoutMs: number): Promise<PostResult> {
  return new Promise((resolve) => {
    const secure = url.protocol === 'https:';
    let done = false;
    const finish = (r: PostResult): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(r);
    };
    const req = (secure ? https : http).request(url, {
      method: 'POST',
      headers: { ...headers, 'content-length': String(body.length) },
      agent: AGENTS[secure ? 'https:' : 'http:'],
    });
    const timer = setTimeout(() => {
      finish({ ok: false, error: 'request timed out' });
      req.destroy();
    }, timeoutMs);
    timer.unref();
    req.once('response', (res) => {
      const retryAfter = res.headers['retry-after'];
      res.resume();
      res.once('end', () => finish({ ok: true, status: res.statusCode ?? 0, retryAfter: typeof retryAfter === 'string' ? retryAfter : null }));
      res.once('error', () => finish({ ok: true, status: res.statusCode ?? 0, retryAfter: null }));
    });
    req.once('error', () => finish({ ok: false, error: 'transport error' }));
    req.end(body);
  });
}

export class OtlpHttpExporter {
  readonly config: OtlpExporterConfig;
  private readonly hooks: OtlpExporterHooks;
  private readonly tuning: OtlpExporterTuning;
  private readonly serviceVersion: string;
  private queue: UsageEvent[] = [];
  /** Content of queued events (full mode only); created on first use. */
  private contents: Map<UsageEvent, CapturedContent> | undefined = undefined;
  private queuedContent = 0;
  private sending: Promise<void> | undefined;
  /** Events ever queued, and ever taken into a batch: kick flushes up to the first count as it was. */
  private enqueued = 0;
  private taken = 0;
  private flushTo = 0;
  private closed = false;
  private readonly timer: NodeJS.Timeout;
  private readonly endpoint: URL;

  constructor(config: OtlpExporterConfig, hooks: OtlpExporterHooks, tuning: Partial<OtlpExporterTuning> = {}, serviceVersion = '0') {
    this.config = config;
    this.endpoint = new URL(config.endpoint);
    this.hooks = hooks;
    this.tuning = { ...DEFAULT_TUNING, ...tuning };
    this.serviceVersion = serviceVersion;
    this.timer = setInterval(() => this.kick(), this.tuning.flushMs);
    this.timer.unref();
  }

  /** Queue `event`; `content` (the request's captured text) is exported only in full mode. */
  emit(event: UsageEvent, content?: CapturedContent): void {
    if (this.closed) return;
    const rate = this.config.sampleRate;
    if (rate < 1 && (rate <= 0 || sampleKey(event.request_id) >= rate)) return;
    if (this.queue.length >= this.tuning.maxQueue) {
      this.hooks.dropped(this.config.name, 'queue_full', 1);
      return;
    }
    const max = this.config.contentMaxBytes ?? 0;
    if (max > 0 && content !== undefined) {
      const trimmed = trimContent(content, max);
      const size = contentSize(trimmed);
      if (this.queuedContent + size > this.tuning.maxQueuedContent) {
        this.hooks.dropped(this.config.name, 'queue_full', 1);
        return;
      }
      (this.contents ??= new Map()).set(event, trimmed);
      this.queuedContent += size;
    }
    this.queue.push(event);
    this.enqueued++;
    if (this.batchReady()) void this.start();
  }

  /** Events queued and not yet handed to a request. */
  get queued(): number {
    return this.queue.length;
  }

  /** Send everything queued, partial batch included (the timer, close); returns the running delivery loop. */
  kick(): Promise<void> {
    this.flushTo = this.enqueued;
    return this.start();
  }

  /** Start the delivery loop if it is not running. */
  private start(): Promise<void> {
    if (this.sending === undefined && this.queue.length > 0) {
      this.sending = this.drain().finally(() => {
        this.sending = undefined;
      });
    }
    return this.sending ?? Promise.resolve();
  }

  /** A full batch is waiting: by count, or (full mode) by content size. */
  private batchReady(): boolean {
    return this.queue.length >= this.tuning.batchSize || this.queuedContent >= this.tuning.maxBatchContent;
  }

  /** Stop taking events; deliver what is queued, waiting at most `graceMs`. */
  async close(graceMs = 2000): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await Promise.race([this.kick(), sleep(graceMs)]);
  }

  /**
   * Deliver full batches; a partial one only when flushing (timer, close). Sending whatever has
   * queued each time the previous export returns would cut batches to the events of one round
   * trip (~40 at 10k events/s), and each export costs the event loop ~300 µs.
   */
  private async drain(): Promise<void> {
    // A flush covers what was queued when it was asked for: under steady load the queue is never
    // empty, and "until empty" would again send every round trip's worth.
    while (this.queue.length > 0 && (this.taken < this.flushTo || this.batchReady())) {
      const contents = this.contents;
      if (contents === undefined || contents.size === 0) {
        const batch = this.queue.splice(0, this.tuning.batchSize);
        this.taken += batch.length;
        await this.deliver(batch, undefined);
        continue;
      }
      // Cut the batch by count and by content size (at least one event).
      let n = 0;
      let size = 0;
      const taken = new Map<UsageEvent, CapturedContent>();
      while (n < this.queue.length && n < this.tuning.batchSize) {
        const c = contents.get(this.queue[n]);
        if (c !== undefined) {
          const s = contentSize(c);
          if (n > 0 && size + s > this.tuning.maxBatchContent) break;
          size += s;
          taken.set(this.queue[n], c);
          contents.delete(this.queue[n]);
        }
        n++;
      }
      this.queuedContent -= size;
      this.taken += n;
      await this.deliver(this.queue.splice(0, n), taken);
    }
  }

  private async deliver(batch: UsageEvent[], contents: ReadonlyMap<UsageEvent, CapturedContent> | undefined): Promise<void> {
    const name = this.config.name;
    const spans = batch.map((e) => usageEventSpanJson(e, contents?.get(e)));
    const body = Buffer.from(exportRequestJson(spans, 'tollgate', this.serviceVersion), 'utf8');
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      const sent = await post(this.endpoint, { ...this.config.headers, 'content-type': 'application/json' }, body, this.tuning.requestTimeoutMs);
      const status = sent.ok ? sent.status : undefined;
      const retryAfter = sent.ok ? sent.retryAfter : null;
      const failure = sent.ok ? undefined : sent.error;
      if (status !== undefined && status >= 200 && status < 300) {
        this.hooks.exported(name, batch.length);
        return;
      }
      if (status !== undefined && !isRetryableStatus(status)) {
        this.hooks.dropped(name, 'permanent_error', batch.length);
        this.hooks.warn(name, 'otlp export refused: batch dropped', { status, events: batch.length });
        return;
      }
      const backoff = Math.min(this.tuning.maxBackoffMs, this.tuning.initialBackoffMs * 2 ** (attempt - 1));
      const jittered = backoff / 2 + Math.random() * (backoff / 2);
      const now = Date.now();
      const delay = Math.min(this.tuning.maxBackoffMs, retryAfterMs(retryAfter, now) ?? jittered);
      if (now + delay - started > this.tuning.retryBudgetMs || this.closed) {
        this.hooks.dropped(name, 'retry_budget_exhausted', batch.length);
        this.hooks.warn(name, 'otlp export kept failing: batch dropped', { status, error: failure, attempts: attempt, events: batch.length });
        return;
      }
      await sleep(delay);
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
      if (next.get(name) !== old) void old.exporter.close();
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

  async close(graceMs = 2000): Promise<void> {
    await Promise.all(this.list.map((e) => e.close(graceMs)));
  }
}
