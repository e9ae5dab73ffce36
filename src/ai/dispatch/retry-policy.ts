// The retry / failover policy of the attempt loop: after a failed attempt, retry the same
// target, fall over to the next one, or stop; how long to wait before a same-target retry; and
// the attempt-kind label of usage events. Pure: no clock, no I/O, randomness injected.
//
// Rules follow the reference gateway (reference/ai-gateway.md §2.2 and §3.4 "Retryability"):
// 5xx, 408, timeouts, transport, decode and stream-abort failures are retryable (same target,
// then the next); 429 only with `retry_on_429`; any other 4xx stops unless its status is in
// `fallback_on_statuses` (which falls over, never retries the same target); invalid upstream
// config or credentials and content-filter refusals never retry. An upstream error sent with
// `x-should-retry: false` is never retried on the same target (the provider says that exact
// request will not succeed there); falling over to another target is still allowed. `true` does
// not widen the policy: what the gateway repeats is the operator's `routing` settings.
import type { ErrorClass } from '../providers/contract.ts';

/** Failure vocabulary of spec 2 §6.1 (`error_class`) that an attempt can end with. */
export type AttemptErrorClass =
  | ErrorClass
  | 'transport'
  | 'timeout'
  | 'upstream_decode'
  | 'upstream_in_band'
  | 'stream_aborted';

/** One failed attempt, as the attempt loop saw it. Also what HealthTracker.recordFailure takes. */
export interface AttemptFailure {
  readonly errorClass: AttemptErrorClass;
  /** Upstream HTTP status (or the status an in-band error maps to), when there was one. */
  readonly status?: number;
  readonly retryAfterMs?: number;
  /** The upstream's `x-should-retry` header on its error, when it sent one. */
  readonly shouldRetry?: boolean;
}

export type Decision = 'retry_same' | 'fallback' | 'stop';
export type AttemptKind = 'initial' | 'retry' | 'fallback';
/** What a failure allows: both retry kinds, falling over only, or nothing. */
export type Disposition = 'retryable' | 'fallback_only' | 'fatal';

/** A group's routing settings, resolved once per snapshot by `retrySettings`. */
export interface RetrySettings {
  /** `routing.retries`; undefined = not set. */
  readonly retries: number | undefined;
  readonly retryOn429: boolean;
  readonly fallbackOnStatuses: ReadonlySet<number>;
  /** Other targets tried after the first; undefined = all. */
  readonly maxFallbacks: number | undefined;
  /** Retries used when neither the target nor the group sets any and no fallback is left. */
  readonly deploymentRetries: number;
}

/** The `routing` block fields this module reads (the resource document's shape). */
export interface RoutingRetryFields {
  retries?: number;
  retry_on_429?: boolean;
  fallback_on_statuses?: readonly number[];
  max_fallbacks?: number;
}

/** Where the attempt loop stands when an attempt has failed. */
export interface AttemptState {
  /** The current target's own `retries` (direct model field); undefined = not set. */
  readonly targetRetries: number | undefined;
  /** Same-target retries already made on the current target. */
  readonly retriesUsed: number;
  /** Fallbacks (moves to another target) already made in this request. */
  readonly fallbacksUsed: number;
  /** The selection list still has a target after the current one. */
  readonly hasNextTarget: boolean;
}

/** reference §2.1 `upstream.retries` [2]. */
export const DEFAULT_DEPLOYMENT_RETRIES = 2;
/** reference §2.2: 250 ms × 2^(n-1), capped at 2000 ms, plus uniform jitter 0–250 ms. */
export const BACKOFF_BASE_MS = 250;
export const BACKOFF_CAP_MS = 2000;
export const BACKOFF_JITTER_MS = 250;
/** reference §2.2: an upstream Retry-After up to 5 s is waited out; a longer one falls over. */
export const MAX_HONOURED_RETRY_AFTER_MS = 5000;

const NO_STATUSES: ReadonlySet<number> = new Set();

export function retrySettings(
  routing: RoutingRetryFields | undefined,
  deploymentRetries: number = DEFAULT_DEPLOYMENT_RETRIES,
): RetrySettings {
  const statuses = routing?.fallback_on_statuses;
  return {
    retries: routing?.retries,
    retryOn429: routing?.retry_on_429 ?? false,
    fallbackOnStatuses: statuses && statuses.length > 0 ? new Set(statuses) : NO_STATUSES,
    maxFallbacks: routing?.max_fallbacks,
    deploymentRetries,
  };
}

/**
 * Same-target retries for one target (reference §2.2): the target model's own `retries`, else
 * the group's, else the deployment default — but the deployment default applies only when no
 * fallback is left; with a fallback queued and nothing configured the loop fails over at once.
 */
export function resolveRetries(
  targetRetries: number | undefined,
  groupRetries: number | undefined,
  deploymentRetries: number,
  canFallBack: boolean,
): number {
  if (targetRetries !== undefined) return targetRetries;
  if (groupRetries !== undefined) return groupRetries;
  return canFallBack ? 0 : deploymentRetries;
}

function statusDisposition(status: number, s: RetrySettings): Disposition {
  if (status === 429) {
    if (s.retryOn429) return 'retryable';
    return s.fallbackOnStatuses.has(429) ? 'fallback_only' : 'fatal';
  }
  if (status >= 500 || status === 408) return 'retryable';
  return s.fallbackOnStatuses.has(status) ? 'fallback_only' : 'fatal';
}

/** What a failure allows, before counting retries and fallbacks. */
export function failureDisposition(f: AttemptFailure, s: RetrySettings): Disposition {
  switch (f.errorClass) {
    case 'content_filter':
    case 'invalid_config':
      return 'fatal';
    case 'invalid_credentials':
      // A bad key is never retried; an operator may still list its status to fall over.
      return f.status !== undefined && s.fallbackOnStatuses.has(f.status) ? 'fallback_only' : 'fatal';
    case 'rate_limited':
      return statusDisposition(f.status ?? 429, s);
    case 'upstream_status':
    case 'invalid_request':
      return f.status === undefined ? 'fatal' : statusDisposition(f.status, s);
    case 'upstream_in_band':
      // An in-band error that names a status is judged by it; one that does not is a broken stream.
      return f.status === undefined ? 'retryable' : statusDisposition(f.status, s);
    case 'transport':
    case 'timeout':
    case 'upstream_decode':
    case 'stream_aborted':
      return 'retryable';
  }
}

/**
 * Next step after a failed attempt. The caller must not call this once a byte has reached the
 * client (no failover after the first byte, ARCHITECTURE §5).
 */
export function decideNext(f: AttemptFailure, s: RetrySettings, at: AttemptState): Decision {
  const disposition = failureDisposition(f, s);
  if (disposition === 'fatal') return 'stop';
  const canFallBack = at.hasNextTarget && (s.maxFallbacks === undefined || at.fallbacksUsed < s.maxFallbacks);
  if (disposition === 'retryable' && f.shouldRetry !== false) {
    const retries = resolveRetries(at.targetRetries, s.retries, s.deploymentRetries, canFallBack);
    const waitable = f.retryAfterMs === undefined || f.retryAfterMs <= MAX_HONOURED_RETRY_AFTER_MS;
    if (at.retriesUsed < retries && waitable) return 'retry_same';
  }
  return canFallBack ? 'fallback' : 'stop';
}

/**
 * Delay before same-target retry number `retry` (1 = the first retry). A Retry-After of at most
 * MAX_HONOURED_RETRY_AFTER_MS is used as is; otherwise 250 ms doubling per retry, capped at
 * 2000 ms, plus jitter in [0, 250) ms from `random` (values in [0, 1)). Fallover waits nothing.
 */
export function backoffDelayMs(retry: number, retryAfterMs: number | undefined, random: () => number): number {
  if (retryAfterMs !== undefined && retryAfterMs >= 0 && retryAfterMs <= MAX_HONOURED_RETRY_AFTER_MS) return retryAfterMs;
  const exp = Math.min(BACKOFF_BASE_MS * 2 ** Math.max(0, retry - 1), BACKOFF_CAP_MS);
  return exp + Math.floor(random() * BACKOFF_JITTER_MS);
}

/** Usage-event `attempt_kind` of an attempt, from the decision that led to it (none: the first). */
export function attemptKind(previous: Exclude<Decision, 'stop'> | undefined): AttemptKind {
  if (previous === undefined) return 'initial';
  return previous === 'retry_same' ? 'retry' : 'fallback';
}
