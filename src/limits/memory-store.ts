// The in-process counter store: exact within one gateway process (every request of the process
// goes through the same maps on one event loop, so check-and-increment is atomic by
// construction). Also the local fallback of the Redis store when Redis is unreachable.
import type { AdmitOutcome, CounterCheck, LimitStore, SlotCheck } from './store.ts';
import { msToWindowEnd, windowStart } from './windows.ts';

interface Cell {
  start: number;
  count: number;
}

/** Sweep expired cells after this many admissions, so idle buckets do not pile up. */
const SWEEP_EVERY = 4096;

export class MemoryStore implements LimitStore {
  private readonly now: () => number;
  private readonly cells = new Map<string, Cell>();
  /** Window length (ms) per cell key, for the sweep. */
  private readonly lengths = new Map<string, number>();
  private readonly slots = new Map<string, Set<string>>();
  private admissions = 0;

  constructor(now: () => number = Date.now) {
    this.now = now;
  }

  private count(key: string, start: number): number {
    const cell = this.cells.get(key);
    return cell !== undefined && cell.start === start ? cell.count : 0;
  }

  private add(key: string, start: number, windowSecs: number, amount: number): number {
    let cell = this.cells.get(key);
    if (cell === undefined) {
      cell = { start, count: 0 };
      this.cells.set(key, cell);
      this.lengths.set(key, windowSecs * 1000);
    } else if (cell.start !== start) {
      cell.start = start;
      cell.count = 0;
    }
    cell.count += amount;
    return cell.count;
  }

  admit(counters: readonly CounterCheck[], slots: readonly SlotCheck[], leaseId: string): AdmitOutcome {
    const now = this.now();
    if (++this.admissions % SWEEP_EVERY === 0) this.sweep(now);
    const used: number[] = [];
    const resetMs: number[] = [];
    const held: number[] = [];
    let failed = -1;
    for (let i = 0; i < counters.length; i++) {
      const c = counters[i];
      const n = this.count(c.key, windowStart(now, c.windowSecs));
      used.push(n);
      resetMs.push(msToWindowEnd(now, c.windowSecs));
      if (failed < 0 && (c.kind === 'requests' ? n + 1 > c.max : n >= c.max)) failed = i;
    }
    for (let j = 0; j < slots.length; j++) {
      const n = this.slots.get(slots[j].key)?.size ?? 0;
      held.push(n);
      if (failed < 0 && n >= slots[j].max) failed = counters.length + j;
    }
    if (failed >= 0) return { failed, used, resetMs, held };
    for (let i = 0; i < counters.length; i++) {
      const c = counters[i];
      if (c.kind === 'requests') used[i] = this.add(c.key, windowStart(now, c.windowSecs), c.windowSecs, 1);
    }
    for (let j = 0; j < slots.length; j++) {
      let set = this.slots.get(slots[j].key);
      if (set === undefined) this.slots.set(slots[j].key, (set = new Set()));
      set.add(leaseId);
      held[j] = set.size;
    }
    return { failed, used, resetMs, held };
  }

  charge(counters: readonly CounterCheck[], amount: number): void {
    const now = this.now();
    for (const c of counters) this.add(c.key, windowStart(now, c.windowSecs), c.windowSecs, amount);
  }

  release(slotKeys: readonly string[], leaseId: string): void {
    for (const key of slotKeys) {
      const set = this.slots.get(key);
      if (set === undefined) continue;
      set.delete(leaseId);
      if (set.size === 0) this.slots.delete(key);
    }
  }

  /** In-process slots cannot be lost: they live as long as the request. */
  renew(slotKeys: readonly string[], leaseId: string): boolean {
    for (const key of slotKeys) if (this.slots.get(key)?.has(leaseId) !== true) return false;
    return true;
  }

  /** Counters and slots currently kept (tests and the sweep). */
  get size(): { cells: number; slots: number } {
    return { cells: this.cells.size, slots: this.slots.size };
  }

  /** Drop cells whose window has ended. */
  sweep(now = this.now()): void {
    for (const [key, cell] of this.cells) {
      if (cell.start + (this.lengths.get(key) ?? 0) <= now) {
        this.cells.delete(key);
        this.lengths.delete(key);
      }
    }
  }

  async close(): Promise<void> {
    this.cells.clear();
    this.slots.clear();
  }
}
