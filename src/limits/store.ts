// The contract between the limiter and its counter stores (in memory, Redis). A store knows
// nothing about layers or policies: it sees flat lists of windowed counters and concurrency
// sets, and answers each admission atomically (all or nothing).
import type { CounterKind } from './windows.ts';

/** One windowed counter to check: `key` names the bucket and dimension, not the window. */
export interface CounterCheck {
  readonly key: string;
  readonly kind: CounterKind;
  readonly windowSecs: number;
  readonly max: number;
}

/** One concurrency set to reserve a slot in. */
export interface SlotCheck {
  readonly key: string;
  readonly max: number;
}

export interface AdmitOutcome {
  /** -1 when admitted; else the index of the first refusing check (counters first, then slots). */
  readonly failed: number;
  /** Per counter: requests counted including this one (when admitted), or tokens used so far. */
  readonly used: readonly number[];
  /** Per counter: milliseconds to its window end. */
  readonly resetMs: readonly number[];
  /** Per slot: slots held, this request's included when admitted. */
  readonly held: readonly number[];
}

type MaybePromise<T> = T | Promise<T>;

export interface LimitStore {
  /**
   * Atomically: refuse when a request counter would exceed its cap, a token counter is already
   * at its cap, or a slot set is full; otherwise count the request in every request counter and
   * add `leaseId` to every slot set. A refusal changes nothing.
   */
  admit(counters: readonly CounterCheck[], slots: readonly SlotCheck[], leaseId: string): MaybePromise<AdmitOutcome>;
  /** Add `amount` tokens to each (token) counter's current window. */
  charge(counters: readonly CounterCheck[], amount: number): MaybePromise<void>;
  /** Give the slots of `leaseId` back. */
  release(slotKeys: readonly string[], leaseId: string): MaybePromise<void>;
  /** Extend the slots of `leaseId`; false when any of them is gone (the lease was lost). */
  renew(slotKeys: readonly string[], leaseId: string): MaybePromise<boolean>;
  close(): Promise<void>;
  /**
   * Whether a failed call certainly never reached the store (it was refused while disconnected),
   * so nothing it would have done needs undoing. Absent: any failed call may have run.
   */
  neverSent?(err: unknown): boolean;
}
