// W3C trace context on pass-through requests: a valid `traceparent` is consumed for the
// gateway's own trace (its trace id is kept with the request); the trace headers themselves are
// not forwarded (request-headers.ts) unless a route names them exactly.

export interface TraceContext {
  readonly traceId: string;
  readonly parentId: string;
  readonly flags: string;
}

function isLowerHex(s: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i);
    if (!((c >= 48 && c <= 57) || (c >= 97 && c <= 102))) return false;
  }
  return true;
}

function allZero(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) !== 48) return false;
  return true;
}

/** The trace context of a `traceparent` value, or undefined when it is not valid. */
export function parseTraceparent(value: string | string[] | undefined): TraceContext | undefined {
  if (typeof value !== 'string') return undefined; // absent, or repeated (ambiguous)
  const v = value.trim();
  // version "-" trace-id (32) "-" parent-id (16) "-" flags (2) [ "-" future fields ]
  if (v.length < 55 || v[2] !== '-' || v[35] !== '-' || v[52] !== '-') return undefined;
  if (!isLowerHex(v, 0, 2) || !isLowerHex(v, 3, 35) || !isLowerHex(v, 36, 52) || !isLowerHex(v, 53, 55)) return undefined;
  const version = v.slice(0, 2);
  if (version === 'ff') return undefined;
  if (version === '00' ? v.length !== 55 : v.length > 55 && v[55] !== '-') return undefined;
  const traceId = v.slice(3, 35);
  const parentId = v.slice(36, 52);
  if (allZero(traceId) || allZero(parentId)) return undefined;
  return { traceId, parentId, flags: v.slice(53, 55) };
}
