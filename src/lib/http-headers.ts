// Small helpers over Node's header records shared by the adapters.

export type HeaderRecord = Readonly<Record<string, string | string[] | undefined>>;

/** The first value of a header (Node gives arrays for repeated headers). */
export function headerValue(headers: HeaderRecord, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Retry-After as seconds or an HTTP date, in ms; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const secs = Number(value);
  if (Number.isFinite(secs)) return secs >= 0 ? Math.round(secs * 1000) : undefined;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * An upstream's retry hint in ms: `retry-after-ms` (sent by Azure OpenAI, and read first by the
 * OpenAI and Anthropic SDKs) when it is a non-negative number, else `Retry-After`.
 */
export function retryAfterMsOf(headers: HeaderRecord, now = Date.now()): number | undefined {
  const ms = headerValue(headers, 'retry-after-ms');
  if (ms !== undefined && ms.trim() !== '') {
    const n = Number(ms);
    if (Number.isFinite(n) && n >= 0) return Math.round(n);
  }
  return parseRetryAfter(headerValue(headers, 'retry-after'), now);
}
