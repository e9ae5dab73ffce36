// Limit arithmetic shared by every store: the dimensions of a RateLimit, their fixed windows,
// and wall-clock-aligned window bounds (start = now − now % window), all in epoch milliseconds
// from an injected clock.
import type { RateLimit } from '../resources/common.ts';

export type CounterKind = 'requests' | 'tokens';

/** One windowed cap of a layer: at most `max` requests (or tokens) per `windowSecs`. */
export interface WindowLimit {
  readonly kind: CounterKind;
  readonly windowSecs: number;
  readonly max: number;
}

/** The caps of one layer: windowed counters plus an optional concurrency cap. */
export interface LayerLimits {
  readonly windows: readonly WindowLimit[];
  readonly concurrency: number | undefined;
}

const DIMENSIONS: ReadonlyArray<readonly [keyof RateLimit, CounterKind, number]> = [
  ['rps', 'requests', 1],
  ['rpm', 'requests', 60],
  ['rph', 'requests', 3600],
  ['rpd', 'requests', 86_400],
  ['tpm', 'tokens', 60],
  ['tpd', 'tokens', 86_400],
];

/** Seconds of each classic policy window. */
export const POLICY_WINDOW_SECS = { second: 1, minute: 60, hour: 3600, day: 86_400 } as const;

/** A RateLimit object as windowed caps; undefined when it sets no cap at all. */
export function limitsOf(rl: RateLimit | undefined): LayerLimits | undefined {
  if (rl === undefined) return undefined;
  const windows: WindowLimit[] = [];
  for (const [field, kind, windowSecs] of DIMENSIONS) {
    const max = rl[field];
    if (max !== undefined) windows.push({ kind, windowSecs, max });
  }
  if (windows.length === 0 && rl.concurrency === undefined) return undefined;
  return { windows, concurrency: rl.concurrency };
}

/** Start of the fixed window holding `nowMs`. */
export function windowStart(nowMs: number, windowSecs: number): number {
  const w = windowSecs * 1000;
  return nowMs - (nowMs % w);
}

/** Milliseconds from `nowMs` to the end of its window (never 0: the window end is exclusive). */
export function msToWindowEnd(nowMs: number, windowSecs: number): number {
  const w = windowSecs * 1000;
  return w - (nowMs % w);
}

/** `Retry-After` / `x-ratelimit-reset-*`: whole seconds to the window end, at least 1. */
export function retryAfterSecs(msLeft: number): number {
  return Math.max(1, Math.ceil(msLeft / 1000));
}
