// Usage events (spec 2 §6.1, spec 3 §6): the record of every model-serving request and of every
// failed attempt, and the sinks they go to. Emitting is one push per event: sinks batch and
// write off the request path.
import type { RequestContext } from '../http/context.ts';
import { lineWriter, type Logger } from './logger.ts';

export type AttemptKind = 'initial' | 'retry' | 'fallback';

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
  latency_ms: number;
  ttft_ms: number | null;
  passthrough_route_name: string | null;
  client_identity: string | null;
}

export interface UsageSink {
  emit(event: UsageEvent): void;
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

/** Writes each event as one JSON line on the process log stream (`"type":"usage"`). */
export class LogUsageSink implements UsageSink {
  private readonly write: (line: string) => void;

  constructor(logger: Logger) {
    this.write = lineWriter(logger);
  }

  emit(event: UsageEvent): void {
    this.write(JSON.stringify({ level: 'info', time: event.occurred_at, service: 'tollgate', ...event, msg: 'usage' }) + '\n');
  }
}

/** Fan-out to several sinks; one failing sink never stops the others or the request. */
export class UsageEmitter implements UsageSink {
  private readonly sinks: readonly UsageSink[];

  constructor(sinks: readonly UsageSink[]) {
    this.sinks = sinks;
  }

  emit(event: UsageEvent): void {
    for (const sink of this.sinks) {
      try {
        sink.emit(event);
      } catch {
        // A sink's failure is its own to count; usage delivery never fails a request.
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

/**
 * The usage event of a model-serving request, from its context: the terminal row at finalize, or
 * (with `attempt`) the zero-token row of one failed attempt.
 */
export function usageEventFrom(ctx: RequestContext, attempt?: AttemptRow): UsageEvent {
  const u = attempt === undefined ? ctx.usage : undefined;
  const status = attempt?.status ?? ctx.status;
  const elapsed = ctx.elapsedMs();
  return {
    type: 'usage',
    occurred_at: new Date().toISOString(),
    request_id: ctx.requestId,
    operation: ctx.operation ?? 'unknown',
    requested_model: ctx.requestedModel ?? '',
    model_id: attempt?.modelId ?? ctx.modelId ?? '',
    provider: ctx.provider ?? null,
    provider_key_id: null,
    api_key_id: ctx.apiKeyId ?? null,
    status,
    status_code: status,
    error_class: attempt?.errorClass ?? ctx.errorKind ?? null,
    error_message: attempt?.errorMessage ?? ctx.errorMessage ?? null,
    attempt_kind: ctx.attemptKind,
    billable: attempt === undefined && status >= 200 && status < 300,
    stream: ctx.stream,
    prompt_tokens: u?.promptTokens ?? (attempt === undefined ? null : 0),
    completion_tokens: u?.completionTokens ?? (attempt === undefined ? null : 0),
    total_tokens: storedTotal(u?.totalTokens),
    cached_tokens: u?.cachedTokens ?? null,
    cache_creation_tokens: u?.cacheCreationTokens ?? null,
    reasoning_tokens: u?.reasoningTokens ?? null,
    latency_ms: Math.round(elapsed * 1000) / 1000,
    ttft_ms: ctx.upstreamFirstByteMs === undefined ? null : Math.round(ctx.upstreamFirstByteMs * 1000) / 1000,
    passthrough_route_name: null,
    client_identity: null,
  };
}
