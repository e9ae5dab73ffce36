// Token counts as upstreams report them are untrusted input: a count is kept only when it is a
// non-negative number no larger than 2^53 − 1 (fractions floored). Anything else (a string, a
// negative number, 1e21 or 1e400, an object) counts as not reported, so it can never reach a
// metric, a limit or a sink (Redis takes no integer that large, and a double past 2^53 is no
// exact count).

/** `v` as a token count, or undefined when it is not a usable one. */
export function tokenCount(v: unknown): number | undefined {
  return typeof v === 'number' && v >= 0 && v <= Number.MAX_SAFE_INTEGER ? Math.floor(v) : undefined;
}
