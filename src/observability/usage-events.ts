// Usage events (spec 2 §6.1, spec 3 §6): the record of every model-serving request and of every
// failed attempt, and the fan-out to the sinks they go to. Emitting is one push per event and
// sink: sinks batch and write off the request path.
import type { IncomingHttpHeaders } from 'node:http';
import type { RequestContext } from '../http/context.ts';
import type { ContentCapture } from './content-capture.ts';
import { framedLineWriter, type FramedLineWriter, type Logger } from './logger.ts';
import { rejectionReason } from './log-destination.ts';
import { isoTime } from '../lib/iso-time.ts';
import { jsonString, jsonText } from '../lib/json-text.ts';
import { usageEventMembersBytes } from './usage-event-json.ts';

export type AttemptKind = 'initial' | 'retry' | 'fallback';

export interface GuardrailApplied {
  name: string;
  kind: string;
  hook: string;
}

export interface GuardrailHit {
  guardrail_name: string;
  hook: string;
  /** Includes `mask_unsupported`, `would_mask_unsupported`, `blocked_buffer_exceeded`. */
  action: string;
  reason?: string;
}

export interface GatewayEmbeddingCall {
  purpose: string;
  model: string;
  status: number;
  prompt_tokens: number | null;
  usage_reported: boolean;
}

export interface GatewayEmbeddingCalls {
  /** At most 64 calls; the rest are counted in `dropped`. */
  calls: GatewayEmbeddingCall[];
  dropped: number;
}

export interface UsageEvent {
  /** Stable discriminator for log pipelines. */
  type: 'usage';
  /** `YYYY-MM-DDTHH:MM:SS.mmmZ`. */
  occurred_at: string;
  request_id: string;
  /** `chat`, `messages`, `count_tokens`, `passthrough`, ... */
  operation: string;
  /** The caller's model value, as sent (empty when there was none). */
  requested_model: string;
  /** The serving model's resource id; empty for pass-through. */
  model_id: string;
  provider: string | null;
  provider_key_id: string | null;
  api_key_id: string | null;
  /** HTTP status recorded (stream statuses at stream end). */
  status: number;
  status_code: number;
  error_class: string | null;
  error_message: string | null;
  attempt_kind: AttemptKind;
  /** False for rows that must not be charged (failed attempts). */
  billable: boolean;
  stream: boolean;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  /** Upstream-reported total, or null when absent or 0. */
  total_tokens: number | null;
  cached_tokens: number | null;
  cache_creation_tokens: number | null;
  reasoning_tokens: number | null;
  /** Request received → response finished (the downstream latency). */
  latency_ms: number;
  /** Request received → first upstream byte. */
  ttft_ms: number | null;
  passthrough_route_name: string | null;
  client_identity: string | null;
  // The fields below are always present on emitted events: the emitter fills the ones a
  // producer left out (see `completeUsageEvent`).
  /** The model name sent upstream. */
  upstream_model?: string | null;
  /** Same as latency_ms, named for its side. */
  downstream_latency_ms?: number | null;
  /** Request received → response head sent to the caller. */
  downstream_ttft_ms?: number | null;
  /** Upstream request sent → upstream response finished (serving attempt). */
  upstream_latency_ms?: number | null;
  /** Upstream request sent → first upstream byte (serving attempt). */
  upstream_ttft_ms?: number | null;
  applied_guardrails?: GuardrailApplied[];
  guardrail_blocked?: boolean;
  /** True when a guardrail refused because it could not evaluate. */
  guardrail_blocked_fail_closed?: boolean;
  guardrail_bypassed_reason?: string | null;
  guardrail_enforced_hits?: GuardrailHit[];
  guardrail_monitor_hits?: GuardrailHit[];
  /** Headers listed under `observability.usage_event.request_headers`, by lowercase name. */
  request_headers?: Record<string, string>;
  gateway_embedding_calls?: GatewayEmbeddingCalls;
}

/** What an emitter passes beside the event: never part of the event, so only sinks that ask read it. */
export interface UsageRequest {
  /** The caller's request headers, for the configured request-header capture. */
  headers: IncomingHttpHeaders;
  /**
   * The request's captured content (spec 3 §6 "Audit capture"): present only while an exporter
   * has `content_mode: full`, read only by such exporters.
   */
  content?: ContentCapture;
  /**
   * The header that carried this request's gateway API key when a route names its own
   * (`auth_header_name`): never captured, whatever `request_headers` lists.
   */
  credentialHeader?: string;
}

/**
 * What goes beside a request's usage event: its headers, the header that carried its credential
 * (if a route named one), and its captured content while an exporter wants it.
 */
export function usageRequest(ctx: RequestContext, credentialHeader?: string): UsageRequest {
  if (ctx.capture === undefined && credentialHeader === undefined) return ctx.req;
  return { headers: ctx.req.headers, content: ctx.capture, credentialHeader };
}

export interface UsageSink {
  /** `req` is the caller's request, for sinks and emitters that capture request headers or content. */
  emit(event: UsageEvent, req?: UsageRequest): void;
  /**
   * Bytes of request and response content this sink wants captured per request (the largest
   * `content_max_bytes` of its `content_mode: full` exporters); 0 or absent = none. Read once
   * per request, so it follows reloads.
   */
  contentCapture?(): number;
}

/** Counters the emitter reports to (tollgate_usage_events_*). */
export interface UsageCounters {
  emitted(event: UsageEvent): void;
  rejected(sink: string, reason: string): void;
}

/** Keeps events in memory (tests, and the status endpoint's recent view). */
export class MemoryUsageSink implements UsageSink {
  readonly events: UsageEvent[] = [];
  private readonly max: number;

  constructor(max = 10_000) {
    this.max = max;
  }

  emit(event: UsageEvent): void {
    if (this.events.length >= this.max) this.events.shift();
    this.events.push(event);
  }
}

/**
 * Writes each event as one JSON line on the process log stream (`"type":"usage"`). `onDropped`
 * hears of events the asynchronous log stream drops (stderr not read, or gone).
 */
export class LogUsageSink implements UsageSink {
  private readonly write: FramedLineWriter;

  constructor(logger: Logger, onDropped?: (events: number, reason: 'backlog_full' | 'write_error') => void) {
    this.write = framedLineWriter(logger, onDropped && ((lines, reason) => onDropped(lines, rejectionReason(reason))));
  }

  emit(event: UsageEvent): void {
    // The event's members (serialised once, shared with the file sink), framed with the log fields.
    this.write(`{"level":"info","time":${jsonString(event.occurred_at)},"service":"tollgate",`, usageEventMembersBytes(event), LOG_TAIL);
  }
}

const LOG_TAIL = jsonText(',"msg":"usage"}\n');

const NO_HITS: GuardrailHit[] = [];
const NO_GUARDRAILS: GuardrailApplied[] = [];
const NO_HEADERS: Record<string, string> = {};
const NO_EMBEDDING_CALLS: GatewayEmbeddingCalls = { calls: [], dropped: 0 };
Object.freeze(NO_EMBEDDING_CALLS.calls);
Object.freeze(NO_EMBEDDING_CALLS);
Object.freeze(NO_HITS);
Object.freeze(NO_GUARDRAILS);
Object.freeze(NO_HEADERS);

/**
 * Fill the fields a producer left out with their neutral values, so every emitted event has the
 * full field list. Guardrails are not evaluated yet: their fields are the "nothing applied" values.
 */
export function completeUsageEvent(e: UsageEvent): UsageEvent {
  e.upstream_model ??= null;
  e.downstream_latency_ms ??= e.latency_ms;
  e.downstream_ttft_ms ??= null;
  e.upstream_latency_ms ??= null;
  e.upstream_ttft_ms ??= null;
  e.applied_guardrails ??= NO_GUARDRAILS;
  e.guardrail_blocked ??= false;
  e.guardrail_blocked_fail_closed ??= false;
  e.guardrail_bypassed_reason ??= null;
  e.guardrail_enforced_hits ??= NO_HITS;
  e.guardrail_monitor_hits ??= NO_HITS;
  e.request_headers ??= NO_HEADERS;
  e.gateway_embedding_calls ??= NO_EMBEDDING_CALLS;
  return e;
}

/** Longest captured header value; longer values are cut (a header is attribution, not payload). */
export const MAX_CAPTURED_HEADER_CHARS = 1024;

/**
 * The configured request headers present on a request (names lowercase, values joined by `, `),
 * except `credentialHeader`, the one that carried the request's gateway API key.
 */
export function captureRequestHeaders(headers: IncomingHttpHeaders, names: readonly string[], credentialHeader?: string): Record<string, string> {
  let out: Record<string, string> | undefined;
  for (const name of names) {
    const v = headers[name];
    if (v === undefined || name === credentialHeader) continue;
    const text = Array.isArray(v) ? v.join(', ') : v;
    (out ??= {})[name] = text.length > MAX_CAPTURED_HEADER_CHARS ? text.slice(0, MAX_CAPTURED_HEADER_CHARS) : text;
  }
  return out ?? NO_HEADERS;
}

export interface NamedSink {
  /** Bounded label value for tollgate_usage_events_rejected_total{sink}. */
  readonly name: string;
  readonly sink: UsageSink;
}

/**
 * Fan-out to several sinks: completes each event's field list, captures the configured request
 * headers, counts it, and hands it to every sink. One failing sink never stops the others or
 * the request. Captured content travels in `req`, beside the event: the log and file sinks
 * never read it, so it never reaches a log line.
 */
export class UsageEmitter implements UsageSink {
  private readonly sinks: readonly NamedSink[];
  private readonly headerNames: readonly string[];
  private readonly counters: UsageCounters | undefined;
  private readonly capturing: readonly UsageSink[];

  constructor(sinks: readonly (UsageSink | NamedSink)[], options: { requestHeaders?: readonly string[]; counters?: UsageCounters } = {}) {
    this.sinks = sinks.map((s, i) => ('sink' in s ? s : { name: `sink${i}`, sink: s }));
    this.headerNames = (options.requestHeaders ?? []).map((h) => h.toLowerCase());
    this.counters = options.counters;
    this.capturing = this.sinks.filter((s) => typeof s.sink.contentCapture === 'function').map((s) => s.sink);
  }

  contentCapture(): number {
    let limit = 0;
    for (const s of this.capturing) limit = Math.max(limit, s.contentCapture!());
    return limit;
  }

  emit(event: UsageEvent, req?: UsageRequest): void {
    if (event.request_headers === undefined && req !== undefined && this.headerNames.length > 0) {
      event.request_headers = captureRequestHeaders(req.headers, this.headerNames, req.credentialHeader);
    }
    completeUsageEvent(event);
    this.counters?.emitted(event);
    const sinks = this.sinks;
    for (let i = 0; i < sinks.length; i++) {
      try {
        sinks[i].sink.emit(event, req);
      } catch {
        // A sink's failure is its own to count; usage delivery never fails a request.
        this.counters?.rejected(sinks[i].name, 'sink_error');
      }
    }
  }
}

/** Total tokens as stored: the reported total, or null when absent or 0. */
export function storedTotal(total: number | undefined): number | null {
  return total === undefined || total === 0 ? null : total;
}

/** Overrides for a per-attempt row; the terminal row takes everything from the context. */
export interface AttemptRow {
  modelId: string;
  status: number;
  errorClass: string;
  errorMessage: string;
  billable: false;
}

/** A duration as stored: milliseconds to the microsecond. */
export const roundMs = (ms: number): number => Math.round(ms * 1000) / 1000;
/** The stored duration between two instants (ms since request start); null when either is missing. */
export const spanMs = (from: number | undefined, to: number | undefined): number | null =>
  from === undefined || to === undefined || to < from ? null : roundMs(to - from);

/**
 * The usage event of a model-serving request, from its context: the terminal row at finalize, or
 * (with `attempt`) the zero-token row of one failed attempt.
 */
export function usageEventFrom(ctx: RequestContext, attempt?: AttemptRow): UsageEvent {
  const u = attempt === undefined ? ctx.usage : undefined;
  const status = attempt?.status ?? ctx.status;
  // A failed attempt's row is written when the attempt fails; the terminal row at finalize.
  const latency = roundMs(attempt === undefined ? ctx.latencyMs() : ctx.elapsedMs());
  const terminal = attempt === undefined;
  return {
    type: 'usage',
    occurred_at: isoTime(),
    request_id: ctx.requestId,
    operation: ctx.operation ?? 'unknown',
    requested_model: ctx.requestedModel ?? '',
    model_id: attempt?.modelId ?? ctx.modelId ?? '',
    provider: ctx.provider ?? null,
    provider_key_id: ctx.providerKeyId ?? null,
    api_key_id: ctx.apiKeyId ?? null,
    status,
    status_code: status,
    error_class: attempt?.errorClass ?? ctx.errorKind ?? null,
    error_message: attempt?.errorMessage ?? ctx.errorMessage ?? null,
    attempt_kind: ctx.attemptKind,
    billable: terminal && status >= 200 && status < 300,
    stream: ctx.stream,
    prompt_tokens: u?.promptTokens ?? (terminal ? null : 0),
    completion_tokens: u?.completionTokens ?? (terminal ? null : 0),
    total_tokens: storedTotal(u?.totalTokens),
    cached_tokens: u?.cachedTokens ?? null,
    cache_creation_tokens: u?.cacheCreationTokens ?? null,
    reasoning_tokens: u?.reasoningTokens ?? null,
    latency_ms: latency,
    ttft_ms: ctx.upstreamFirstByteMs === undefined ? null : roundMs(ctx.upstreamFirstByteMs),
    passthrough_route_name: null,
    client_identity: null,
    upstream_model: ctx.upstreamModel ?? null,
    downstream_latency_ms: latency,
    downstream_ttft_ms: terminal && ctx.downstreamFirstByteMs !== undefined ? roundMs(ctx.downstreamFirstByteMs) : null,
    upstream_latency_ms: terminal ? spanMs(ctx.upstreamSentMs, ctx.upstreamEndMs) : null,
    upstream_ttft_ms: terminal ? spanMs(ctx.upstreamSentMs, ctx.upstreamFirstByteMs) : null,
    // The rest of the field list in the same literal: one object shape for every event, no
    // properties added later (completeUsageEvent then has nothing to do).
    applied_guardrails: NO_GUARDRAILS,
    guardrail_blocked: false,
    guardrail_blocked_fail_closed: false,
    guardrail_bypassed_reason: null,
    guardrail_enforced_hits: NO_HITS,
    guardrail_monitor_hits: NO_HITS,
    request_headers: undefined,
    gateway_embedding_calls: NO_EMBEDDING_CALLS,
  };
}
