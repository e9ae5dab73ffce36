// Per-target health of model-group routing, keyed by model id: in-flight counts (least_busy),
// a latency EWMA (least_latency), consecutive failures, cooldowns and the background-check
// verdict. One process-wide instance outlives snapshots; the clock is injected.
//
// Cooldown (reference/ai-gateway.md §3.4 "Health"): a failure whose status is one of the
// model's `cooldown.trigger_statuses` (or a timeout / transport failure, when switched on) takes
// the target out of rotation for `default_seconds`, or for the upstream Retry-After when
// `honor_retry_after`, never longer than `max_seconds`. The reference cools down on the first
// triggering failure; `failThreshold` (default 1) lets a policy wait for N in a row.
import type { AttemptFailure } from './retry-policy.ts';

/** The direct model's `cooldown` block as written in the resource document. */
export interface CooldownBlock {
  enabled?: boolean;
  default_seconds?: number;
  max_seconds?: number;
  honor_retry_after?: boolean;
  trigger_statuses?: readonly number[];
  trigger_on_timeout?: boolean;
  trigger_on_transport?: boolean;
}

/** A resolved cooldown policy; build one per direct model per snapshot with `cooldownPolicy`. */
export interface CooldownPolicy {
  readonly enabled: boolean;
  readonly defaultMs: number;
  readonly maxMs: number;
  readonly honorRetryAfter: boolean;
  readonly triggerStatuses: ReadonlySet<number>;
  readonly triggerOnTimeout: boolean;
  readonly triggerOnTransport: boolean;
  /** Triggering failures in a row (no success between) that start a cooldown. */
  readonly failThreshold: number;
}

/** Defaults of the `cooldown` block (resources/model.ts, reference §3.4). */
export const COOLDOWN_DEFAULTS = {
  enabled: true,
  default_seconds: 30,
  max_seconds: 600,
  honor_retry_after: true,
  trigger_statuses: [401, 408, 429, 500, 502, 503, 504],
  trigger_on_timeout: true,
  trigger_on_transport: true,
} as const;
export const DEFAULT_FAIL_THRESHOLD = 1;
/** reference §3.4: consecutive failures at which the status view says degraded / down. */
export const DEGRADED_AFTER_FAILURES = 4;
export const DOWN_AFTER_FAILURES = 8;
/**
 * Weight of a new latency sample in the EWMA. 0.3 follows a slowdown within a few requests
 * while one outlier moves the average by less than a third of its excess.
 */
export const LATENCY_EWMA_ALPHA = 0.3;

/**
 * Resolves a model's `cooldown` block. A model without the block gets every default (cooldown
 * on): groups need it to route around a failing member.
 */
export function cooldownPolicy(block: CooldownBlock | undefined, failThreshold: number = DEFAULT_FAIL_THRESHOLD): CooldownPolicy {
  const d = COOLDOWN_DEFAULTS;
  return {
    enabled: block?.enabled ?? d.enabled,
    defaultMs: (block?.default_seconds ?? d.default_seconds) * 1000,
    maxMs: (block?.max_seconds ?? d.max_seconds) * 1000,
    honorRetryAfter: block?.honor_retry_after ?? d.honor_retry_after,
    triggerStatuses: new Set(block?.trigger_statuses ?? d.trigger_statuses),
    triggerOnTimeout: block?.trigger_on_timeout ?? d.trigger_on_timeout,
    triggerOnTransport: block?.trigger_on_transport ?? d.trigger_on_transport,
    failThreshold: Math.max(1, failThreshold),
  };
}

/** Read-only view of one target's health; the live object, not a copy. */
export interface TargetHealth {
  readonly inFlight: number;
  /** Latency EWMA in ms; undefined until the first sample. */
  readonly latencyEwmaMs: number | undefined;
  readonly consecutiveFailures: number;
  /** Epoch ms the cooldown ends; 0 or a past time = not cooling. */
  readonly coolingUntil: number;
  /** The background model check's verdict (false until a check says otherwise). */
  readonly unhealthy: boolean;
}

/** What selection reads. */
export interface HealthReader {
  readonly now: () => number;
  peek(key: string): TargetHealth | undefined;
}

/** One row of the status view (JSON-able). */
export interface TargetHealthRow {
  key: string;
  state: 'healthy' | 'degraded' | 'down';
  in_flight: number;
  latency_ewma_ms: number | null;
  consecutive_failures: number;
  cooling_down_until: string | null;
  unhealthy: boolean;
  last_error: string | null;
  last_error_at: string | null;
}

interface Entry {
  inFlight: number;
  latencyEwmaMs: number | undefined;
  consecutiveFailures: number;
  /** Triggering failures since the last success or cooldown start. */
  triggerStreak: number;
  coolingUntil: number;
  unhealthy: boolean;
  lastError: string | null;
  lastErrorAt: number;
}

function newEntry(): Entry {
  return {
    inFlight: 0,
    latencyEwmaMs: undefined,
    consecutiveFailures: 0,
    triggerStreak: 0,
    coolingUntil: 0,
    unhealthy: false,
    lastError: null,
    lastErrorAt: 0,
  };
}

/** Does this failure start (or count towards) a cooldown under `p`? */
function triggers(f: AttemptFailure, status: number | undefined, p: CooldownPolicy): boolean {
  if (status !== undefined) return p.triggerStatuses.has(status);
  switch (f.errorClass) {
    case 'timeout':
      return p.triggerOnTimeout;
    case 'transport':
    case 'stream_aborted':
      return p.triggerOnTransport;
    default:
      return false;
  }
}

export interface HealthTrackerOptions {
  now: () => number;
}

export class HealthTracker implements HealthReader {
  readonly now: () => number;
  readonly #entries = new Map<string, Entry>();

  constructor(options: HealthTrackerOptions) {
    this.now = options.now;
  }

  #entry(key: string): Entry {
    let e = this.#entries.get(key);
    if (e === undefined) {
      e = newEntry();
      this.#entries.set(key, e);
    }
    return e;
  }

  peek(key: string): TargetHealth | undefined {
    return this.#entries.get(key);
  }

  /** An attempt against `key` went out. Pair every start with one finish. */
  start(key: string): void {
    this.#entry(key).inFlight++;
  }

  finish(key: string): void {
    const e = this.#entries.get(key);
    if (e !== undefined && e.inFlight > 0) e.inFlight--;
  }

  /**
   * A successful attempt: clears the failure count and any cooldown (the target just proved it
   * works) and, when given, adds a latency sample (time to the response head is the useful one).
   */
  recordSuccess(key: string, latencyMs?: number): void {
    const e = this.#entry(key);
    e.consecutiveFailures = 0;
    e.triggerStreak = 0;
    e.coolingUntil = 0;
    if (latencyMs !== undefined && Number.isFinite(latencyMs) && latencyMs >= 0) {
      e.latencyEwmaMs = e.latencyEwmaMs === undefined ? latencyMs : e.latencyEwmaMs + LATENCY_EWMA_ALPHA * (latencyMs - e.latencyEwmaMs);
    }
  }

  /**
   * A failed attempt. Caller faults (a content-filter refusal, an invalid request whose status
   * is no trigger) say nothing about the target and are ignored. Returns true when this failure
   * started or extended a cooldown.
   */
  recordFailure(key: string, f: AttemptFailure, p: CooldownPolicy): boolean {
    const status = f.status ?? (f.errorClass === 'rate_limited' ? 429 : undefined);
    const trigger = triggers(f, status, p);
    if (!trigger && (f.errorClass === 'content_filter' || f.errorClass === 'invalid_request')) return false;
    const e = this.#entry(key);
    const now = this.now();
    e.consecutiveFailures++;
    e.lastError = status === undefined ? f.errorClass : `${f.errorClass} ${status}`;
    e.lastErrorAt = now;
    if (!trigger || !p.enabled) return false;
    if (++e.triggerStreak < p.failThreshold) return false;
    e.triggerStreak = 0;
    const wanted = p.honorRetryAfter && f.retryAfterMs !== undefined && f.retryAfterMs >= 0 ? f.retryAfterMs : p.defaultMs;
    const ms = Math.min(wanted, p.maxMs);
    if (ms <= 0) return false;
    if (now + ms > e.coolingUntil) e.coolingUntil = now + ms;
    return true;
  }

  /** The background model check's verdict for `key`. */
  setUnhealthy(key: string, unhealthy: boolean): void {
    this.#entry(key).unhealthy = unhealthy;
  }

  isCoolingDown(key: string): boolean {
    const e = this.#entries.get(key);
    return e !== undefined && e.coolingUntil > this.now();
  }

  /** Epoch ms the cooldown of `key` ends, or undefined when it is not cooling. */
  cooldownUntil(key: string): number | undefined {
    const e = this.#entries.get(key);
    return e !== undefined && e.coolingUntil > this.now() ? e.coolingUntil : undefined;
  }

  /** Forget targets no longer configured (call after a snapshot swap); in-flight ones stay. */
  retain(live: { has(key: string): boolean }): void {
    for (const [key, e] of this.#entries) {
      if (!live.has(key) && e.inFlight === 0) this.#entries.delete(key);
    }
  }

  /**
   * Per-target status view, sorted by key: a row for each of `keys` (the targets the serving
   * configuration can route to; one that has had no traffic yet reads healthy and idle) and for
   * every target tracked besides (one a reload removed, still in flight).
   */
  snapshot(keys: Iterable<string> = []): TargetHealthRow[] {
    const now = this.now();
    const rows: TargetHealthRow[] = [];
    const listed = new Set<string>();
    for (const key of keys) {
      if (listed.has(key)) continue;
      listed.add(key);
      rows.push(healthRow(key, this.#entries.get(key) ?? IDLE, now));
    }
    for (const [key, e] of this.#entries) if (!listed.has(key)) rows.push(healthRow(key, e, now));
    return rows.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }
}

/** A target no attempt has gone to yet. */
const IDLE: Entry = Object.freeze(newEntry());

function healthRow(key: string, e: Entry, now: number): TargetHealthRow {
  const n = e.consecutiveFailures;
  return {
    key,
    state: n >= DOWN_AFTER_FAILURES ? 'down' : n >= DEGRADED_AFTER_FAILURES ? 'degraded' : 'healthy',
    in_flight: e.inFlight,
    latency_ewma_ms: e.latencyEwmaMs === undefined ? null : Math.round(e.latencyEwmaMs * 10) / 10,
    consecutive_failures: n,
    cooling_down_until: e.coolingUntil > now ? new Date(e.coolingUntil).toISOString() : null,
    unhealthy: e.unhealthy,
    last_error: e.lastError,
    last_error_at: e.lastError === null ? null : new Date(e.lastErrorAt).toISOString(),
  };
}
