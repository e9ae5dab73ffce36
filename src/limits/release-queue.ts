// Releases of shared-store (Redis) concurrency leases that failed: Redis was unreachable, or the
// call timed out. They are retried until one lands or until the lease would have expired on its
// own (concurrency_ttl_secs after it was queued). Without this, a slot held when Redis went away
// stays taken for the whole TTL after Redis is back: with `concurrency: 1` and the default 300 s
// TTL, a one-second network blip locks the key or model out for five minutes.
//
// One retry round at a time, and a round stops at the first failure (Redis is still away), so an
// outage costs one Redis call per round however many releases wait.
import type { LimitStore } from './store.ts';

/** Most releases kept waiting at once. */
const MAX_WAITING = 10_000;

interface Unreleased {
  readonly slotKeys: readonly string[];
  /** After this (epoch ms) the lease has expired in the store anyway. */
  readonly expiresAt: number;
}

export interface ReleaseQueueOptions {
  store: LimitStore;
  /** The store's lease lifetime without renewal (concurrency_ttl_secs), in ms. */
  leaseTtlMs: number;
  /** Pause between retry rounds while releases wait. */
  retryMs: number;
  now: () => number;
  /** A retry round failed (counted like any failed store call). */
  onFailure: (err: unknown) => void;
  /** A retry landed: the store answers again. */
  onSuccess: () => void;
}

export class ReleaseQueue {
  private readonly options: ReleaseQueueOptions;
  private readonly waiting = new Map<string, Unreleased>();
  private timer: NodeJS.Timeout | undefined;
  private round: Promise<void> | undefined;

  constructor(options: ReleaseQueueOptions) {
    this.options = options;
  }

  /** Releases waiting for the store (tests, metrics). */
  get size(): number {
    return this.waiting.size;
  }

  /** Keep the release of `leaseId` for a retry. */
  add(slotKeys: readonly string[], leaseId: string): void {
    // Bounded: past the cap the oldest is given up (its lease still expires at its TTL).
    if (this.waiting.size >= MAX_WAITING) this.waiting.delete(this.waiting.keys().next().value!);
    this.waiting.set(leaseId, { slotKeys, expiresAt: this.options.now() + this.options.leaseTtlMs });
    if (this.timer === undefined) {
      this.timer = setInterval(() => void this.retry(), this.options.retryMs);
      // Never what keeps the process alive: at worst the leases expire on their own.
      this.timer.unref();
    }
  }

  /** One retry round (no-op when one is under way or nothing waits). */
  retry(): Promise<void> {
    if (this.waiting.size === 0) return Promise.resolve();
    this.round ??= this.runRound().finally(() => {
      this.round = undefined;
    });
    return this.round;
  }

  private async runRound(): Promise<void> {
    const { store, now } = this.options;
    for (const [leaseId, u] of [...this.waiting]) {
      if (u.expiresAt <= now()) {
        this.waiting.delete(leaseId);
        continue;
      }
      try {
        await store.release(u.slotKeys, leaseId);
      } catch (err) {
        this.options.onFailure(err);
        break;
      }
      this.waiting.delete(leaseId);
      this.options.onSuccess();
    }
    if (this.waiting.size === 0) this.stop();
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }
}
