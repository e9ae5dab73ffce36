// The limiter: turns the layers that apply to a request into counter and slot checks, runs them
// as one atomic admission against the store, and hands back a handle that holds the request's
// concurrency slots until finalize, charges its tokens then, and (for a shared store) renews
// its leases meanwhile. When the shared store fails, `fail_open` falls back to local counters
// (one warning per outage, every failure counted) and `fail_closed` refuses with 503; a release
// the shared store did not take is retried until it lands (release-queue.ts).
import { randomBytes } from 'node:crypto';
import { GatewayError } from '../lib/errors.ts';
import type { ApiKeyEntry, ModelEntry, Snapshot } from '../snapshot/snapshot.ts';
import { layersFor, type Layer } from './layers.ts';
import type { MemoryStore } from './memory-store.ts';
import { ReleaseQueue } from './release-queue.ts';
import type { AdmitOutcome, CounterCheck, LimitStore, SlotCheck } from './store.ts';
import { retryAfterSecs } from './windows.ts';

export type FailureMode = 'fail_open' | 'fail_closed';

/** The counters the limiter reports to (structurally the Metrics class). */
export interface LimiterMetrics {
  readonly rateLimitRejections: { inc(labels: { scope: string; layer: string }): void };
  readonly redisFailures: { inc(labels: { operation: string }): void };
}

export interface LimiterLogger {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface LimiterOptions {
  store: LimitStore;
  /** Local counters used while a shared `store` fails (fail_open). */
  fallback?: MemoryStore;
  failureMode?: FailureMode;
  /** How often held leases of a shared store are renewed; 0 = never (in-process store). */
  renewIntervalMs?: number;
  /** Lifetime of an unrenewed lease in the shared store: how long a failed release is retried. */
  leaseTtlMs?: number;
  /** Pause between retries of releases the shared store did not take (default 1 s). */
  releaseRetryMs?: number;
  now?: () => number;
  metrics?: LimiterMetrics;
  logger?: LimiterLogger;
}

export interface LimitRequest {
  snapshot: Snapshot;
  key: ApiKeyEntry;
  /** The resolved model (a group's own entry); undefined when there is none. */
  model: ModelEntry | undefined;
  /** Charge the response's tokens at finalize (false for pass-through: check only). */
  chargeTokens: boolean;
  /** Receives the name of the policy that refused the request, or else of the first that applied. */
  attribution?: { policyName: string | undefined };
}

/** Token counts as the request context records them. */
export interface ChargedUsage {
  totalTokens?: number;
  promptTokens?: number;
  completionTokens?: number;
}

export const LEASE_LOST_MESSAGE = 'distributed concurrency lease was lost';

const MESSAGES = {
  requests: 'request limit exceeded (requests)',
  tokens: 'token limit exceeded (tokens)',
  concurrency: 'concurrency limit exceeded',
} as const;

const leasePrefix = `${randomBytes(6).toString('hex')}-`;
let leaseSeq = 0;

/** Reservations of one admitted request, released exactly once at finalize. */
export class LimitHandle {
  /** `x-ratelimit-*` response headers, as name/value pairs. */
  readonly headers: ReadonlyArray<readonly [string, string]>;
  private readonly limiter: Limiter;
  /** The store that holds this request's slots (the fallback during an outage). */
  readonly store: LimitStore;
  private readonly tokenCounters: readonly CounterCheck[];
  readonly slotKeys: readonly string[];
  readonly leaseId: string;
  private done = false;
  private lostHandlers: Array<() => void> | undefined;

  constructor(limiter: Limiter, store: LimitStore, tokenCounters: readonly CounterCheck[], slotKeys: readonly string[], leaseId: string, headers: ReadonlyArray<readonly [string, string]>) {
    this.limiter = limiter;
    this.store = store;
    this.tokenCounters = tokenCounters;
    this.slotKeys = slotKeys;
    this.leaseId = leaseId;
    this.headers = headers;
  }

  get finished(): boolean {
    return this.done;
  }

  /** Run `fn` if the shared store reports this request's lease gone while it still runs. */
  onLost(fn: () => void): void {
    (this.lostHandlers ??= []).push(fn);
  }

  /** Called by the renewal loop. */
  lost(): void {
    if (this.done) return;
    const handlers = this.lostHandlers;
    this.lostHandlers = undefined;
    if (handlers !== undefined) for (const fn of handlers) fn();
  }

  /** Finalize: charge the reported tokens and give the slots back. Runs once; later calls do nothing. */
  release(usage: ChargedUsage | undefined): void {
    if (this.done) return;
    this.done = true;
    const tokens = usage === undefined ? 0 : usage.totalTokens ?? (usage.promptTokens ?? 0) + (usage.completionTokens ?? 0);
    this.limiter.settle(this, this.tokenCounters, tokens);
  }
}

export class Limiter {
  private readonly store: LimitStore;
  private readonly fallback: MemoryStore | undefined;
  private readonly failureMode: FailureMode;
  private readonly renewIntervalMs: number;
  private readonly now: () => number;
  private readonly metrics: LimiterMetrics | undefined;
  private readonly logger: LimiterLogger | undefined;
  private readonly live = new Set<LimitHandle>();
  private renewTimer: NodeJS.Timeout | undefined;
  private renewing = false;
  private outage = false;
  private readonly unreleased: ReleaseQueue;

  constructor(options: LimiterOptions) {
    this.store = options.store;
    this.fallback = options.fallback;
    this.failureMode = options.failureMode ?? 'fail_open';
    this.renewIntervalMs = options.renewIntervalMs ?? 0;
    this.now = options.now ?? Date.now;
    this.metrics = options.metrics;
    this.logger = options.logger;
    this.unreleased = new ReleaseQueue({
      store: this.store,
      leaseTtlMs: options.leaseTtlMs ?? 300_000,
      retryMs: options.releaseRetryMs ?? 1000,
      now: this.now,
      onFailure: (err) => this.failed('release', err),
      onSuccess: () => this.recovered(),
    });
  }

  /**
   * Admit a request against every applicable layer: the handle, or a rejection with a 429
   * GatewayError (503 when the shared store is down and the mode is fail_closed). Undefined at
   * once, with no promise and no store call, when no limit applies: most requests of most
   * deployments pay nothing for the admit phase.
   */
  admit(req: LimitRequest): Promise<LimitHandle> | undefined {
    const layers = layersFor(req.snapshot, req.key, req.model, this.now());
    return layers.length === 0 ? undefined : this.admitLayers(req, layers);
  }

  private async admitLayers(req: LimitRequest, layers: Layer[]): Promise<LimitHandle> {
    const counters: CounterCheck[] = [];
    const counterLayer: Layer[] = [];
    const slots: SlotCheck[] = [];
    const slotLayer: Layer[] = [];
    for (const layer of layers) {
      for (const w of layer.limits.windows) {
        counters.push({ key: `${layer.bucket}:${w.kind === 'requests' ? 'r' : 't'}:${w.windowSecs}`, kind: w.kind, windowSecs: w.windowSecs, max: w.max });
        counterLayer.push(layer);
      }
      if (layer.limits.concurrency !== undefined) {
        slots.push({ key: `${layer.bucket}:conc`, max: layer.limits.concurrency });
        slotLayer.push(layer);
      }
    }
    const leaseId = slots.length > 0 ? leasePrefix + (++leaseSeq).toString(36) : '';
    let store = this.store;
    let outcome: AdmitOutcome;
    try {
      outcome = await store.admit(counters, slots, leaseId);
      this.recovered();
    } catch (err) {
      this.failed('admit', err);
      // A timed-out admit (or one cut off with the connection) may still have run or run once
      // the store answers again, holding this lease: release it behind the admit (the store runs
      // commands in order), and retry that until it lands.
      if (slots.length > 0 && store.neverSent?.(err) !== true) this.track(this.releaseShared(slots.map((sl) => sl.key), leaseId, undefined));
      if (this.fallback === undefined || this.failureMode === 'fail_closed') {
        throw new GatewayError('rate_limit_unavailable', 'rate limit store unavailable', { cause: err });
      }
      store = this.fallback;
      outcome = this.fallback.admit(counters, slots, leaseId);
    }
    // The label names the policy that refused, or else the first policy that applied.
    if (outcome.failed < 0 && req.attribution !== undefined) req.attribution.policyName ??= layers.find((l) => l.policy !== undefined)?.policy?.name;
    if (outcome.failed >= 0) throw this.rejection(outcome, counters, counterLayer, slotLayer, req.attribution, layers);
    const tokenCounters = req.chargeTokens ? counters.filter((c) => c.kind === 'tokens') : [];
    const handle = new LimitHandle(this, store, tokenCounters, slots.map((s) => s.key), leaseId, rateLimitHeaders(outcome, counters, slots));
    if (slots.length > 0 && store === this.store && this.renewIntervalMs > 0) this.hold(handle);
    return handle;
  }

  private rejection(outcome: AdmitOutcome, counters: CounterCheck[], counterLayer: Layer[], slotLayer: Layer[], attribution: LimitRequest['attribution'], layers: readonly Layer[]): GatewayError {
    const i = longestRefusal(outcome, counters);
    const layer = i < counters.length ? counterLayer[i] : slotLayer[i - counters.length];
    if (attribution !== undefined) attribution.policyName = layer.policy?.name ?? attribution.policyName ?? layers.find((l) => l.policy !== undefined)?.policy?.name;
    this.metrics?.rateLimitRejections.inc({ scope: layer.scope, layer: layer.layer });
    const policy = layer.policy === undefined ? undefined : { id: layer.policy.id, name: layer.policy.name };
    if (i >= counters.length) return new GatewayError('rate_limit_exceeded', MESSAGES.concurrency, { policy });
    return new GatewayError('rate_limit_exceeded', MESSAGES[counters[i].kind], {
      headers: { 'retry-after': String(retryAfterSecs(outcome.resetMs[i])) },
      policy,
    });
  }

  /** Finalize of one handle: charge tokens, release slots, stop renewing. */
  settle(handle: LimitHandle, tokenCounters: readonly CounterCheck[], tokens: number): void {
    this.live.delete(handle);
    if (this.live.size === 0 && this.renewTimer !== undefined) {
      clearInterval(this.renewTimer);
      this.renewTimer = undefined;
    }
    if (tokens > 0 && tokenCounters.length > 0) this.charge(tokenCounters, tokens);
    if (handle.slotKeys.length === 0) return;
    if (handle.store === this.store) this.track(this.releaseShared(handle.slotKeys, handle.leaseId, 'release'));
    else void handle.store.release(handle.slotKeys, handle.leaseId);
  }

  private charge(counters: readonly CounterCheck[], tokens: number): void {
    void (async () => {
      try {
        await this.store.charge(counters, tokens);
        this.recovered();
      } catch (err) {
        this.failed('charge', err);
        if (this.failureMode === 'fail_open') this.fallback?.charge(counters, tokens);
      }
    })();
  }

  /** Release a lease in the shared store; one it does not take is retried until it lands. */
  private async releaseShared(slotKeys: readonly string[], leaseId: string, operation: string | undefined): Promise<void> {
    try {
      await this.store.release(slotKeys, leaseId);
      this.recovered();
    } catch (err) {
      if (operation !== undefined) this.failed(operation, err);
      this.unreleased.add(slotKeys, leaseId);
    }
  }

  private hold(handle: LimitHandle): void {
    this.live.add(handle);
    if (this.renewTimer === undefined) {
      this.renewTimer = setInterval(() => void this.renewAll(), this.renewIntervalMs);
      this.renewTimer.unref();
    }
  }

  /** One renewal round over every held lease; a lease reported gone ends its request. */
  async renewAll(): Promise<void> {
    if (this.renewing) return;
    this.renewing = true;
    try {
      await Promise.all([...this.live].map(async (h) => {
        let ok: boolean;
        try {
          ok = await this.store.renew(h.slotKeys, h.leaseId);
          this.recovered();
        } catch (err) {
          // Unreachable is not "gone": keep serving and try again next round.
          this.failed('renew', err);
          return;
        }
        if (!ok && !h.finished) {
          this.live.delete(h);
          h.lost();
        }
      }));
    } finally {
      this.renewing = false;
    }
  }

  private failed(operation: string, err: unknown): void {
    this.metrics?.redisFailures.inc({ operation });
    if (this.outage) return;
    this.outage = true;
    this.logger?.warn(
      { err: err instanceof Error ? err.message : String(err), failure_mode: this.failureMode },
      this.failureMode === 'fail_open'
        ? 'rate-limit store unreachable: counting locally until it is back'
        : 'rate-limit store unreachable: refusing limited requests until it is back',
    );
  }

  private recovered(): void {
    if (!this.outage) return;
    this.outage = false;
    this.logger?.info({}, 'rate-limit store reachable again');
    void this.unreleased.retry();
  }

  /** Releases the shared store has not taken yet (tests). */
  get unreleasedLeases(): number {
    return this.unreleased.size;
  }

  /** Leases currently renewed (tests). */
  get heldLeases(): number {
    return this.live.size;
  }

  /** Releases under way; close() lets them reach the store first. */
  private readonly pending = new Set<Promise<void>>();

  private track(p: Promise<void>): void {
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  async close(): Promise<void> {
    if (this.renewTimer !== undefined) clearInterval(this.renewTimer);
    this.renewTimer = undefined;
    this.live.clear();
    await Promise.all(this.pending);
    // One last try for releases still waiting; start.ts bounds how long close may take.
    await this.unreleased.retry();
    this.unreleased.stop();
    await this.store.close();
    await this.fallback?.close();
  }
}

/**
 * The most constrained counter of each family decides its headers: the fewest left, and of counters
 * with as few left, the one whose window ends last (the reset a refusal's Retry-After would name).
 */
export function rateLimitHeaders(outcome: AdmitOutcome, counters: readonly CounterCheck[], slots: readonly SlotCheck[]): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const kind of ['requests', 'tokens'] as const) {
    let best = -1;
    let bestRemaining = Infinity;
    for (let i = 0; i < counters.length; i++) {
      if (counters[i].kind !== kind) continue;
      const remaining = Math.max(0, counters[i].max - outcome.used[i]);
      if (remaining < bestRemaining || (remaining === bestRemaining && outcome.resetMs[i] > outcome.resetMs[best])) {
        bestRemaining = remaining;
        best = i;
      }
    }
    if (best < 0) continue;
    out.push(
      [`x-ratelimit-limit-${kind}`, String(counters[best].max)],
      [`x-ratelimit-remaining-${kind}`, String(bestRemaining)],
      [`x-ratelimit-reset-${kind}`, String(retryAfterSecs(outcome.resetMs[best]))],
    );
  }
  let bestSlot = -1;
  let slotRemaining = Infinity;
  for (let j = 0; j < slots.length; j++) {
    const remaining = Math.max(0, slots[j].max - outcome.held[j]);
    if (remaining < slotRemaining) {
      slotRemaining = remaining;
      bestSlot = j;
    }
  }
  if (bestSlot >= 0) {
    out.push(['x-ratelimit-limit-concurrent', String(slots[bestSlot].max)], ['x-ratelimit-remaining-concurrent', String(slotRemaining)]);
  }
  return out;
}

/**
 * The refusing check a caller has to wait out: of the counters that refuse, the one whose window
 * ends last (a Retry-After of a shorter window would send the caller into another refusal); a
 * full slot set when no counter refuses.
 */
function longestRefusal(outcome: AdmitOutcome, counters: readonly CounterCheck[]): number {
  let worst = outcome.failed;
  if (worst >= counters.length) return worst;
  for (let i = worst + 1; i < counters.length; i++) {
    const c = counters[i];
    const used = outcome.used[i];
    const refuses = c.kind === 'requests' ? used + 1 > c.max : used >= c.max;
    if (refuses && outcome.resetMs[i] > outcome.resetMs[worst]) worst = i;
  }
  return worst;
}
