// Token counts as upstreams report them are untrusted input: a count is kept only when it is a
// finite, non-negative number (fractions floored). Anything else (a string, a negative number,
// 1e400, an object) counts as not reported, so it can never reach a metric, a limit or a sink.

/** `v` as a token count, or undefined when it is not a usable one. */
export function tokenCount(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : undefined;
}
