// Usage events (spec 2 §6.1, spec 3 §6): the record of every model-serving request and of every
// failed attempt, and the sinks they go to. Emitting is one push per event: sinks batch and
// write off the request path.
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
