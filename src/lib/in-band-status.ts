// The HTTP status an in-band (mid-stream) error stands for, from the error `type` or `code` the
// provider put in the event. Stream endings are recorded with it (an in-band rate-limit error is
// a 429, spec 2 §6.1 and spec 3 §3); types not listed here count as upstream failures (502).

/** In-band error types and codes that name a client-side (4xx) failure. */
export const IN_BAND_ERROR_STATUS: Readonly<Record<string, number>> = {
  invalid_request_error: 400,
  context_length_exceeded: 400,
  authentication_error: 401,
  invalid_api_key: 401,
  permission_error: 403,
  permission_denied: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  rate_limit_exceeded: 429,
  insufficient_quota: 429,
};

/** The listed status for a type or code, or undefined. */
export function inBandStatusOf(typeOrCode: unknown): number | undefined {
  return typeof typeOrCode === 'string' && Object.hasOwn(IN_BAND_ERROR_STATUS, typeOrCode) ? IN_BAND_ERROR_STATUS[typeOrCode] : undefined;
}

const THREE_DIGITS = /^\d{3}$/;

/**
 * The status an in-band error object is recorded with: its own 4xx when it names one (a numeric
 * `status`, `status_code`, `code` or `http_status`, else a listed `type` or `code`), else 502.
 */
export function inBandErrorStatus(err: unknown): number {
  if (err === null || typeof err !== 'object' || Array.isArray(err)) return 502;
  const e = err as Record<string, unknown>;
  for (const v of [e.status, e.status_code, e.code, e.http_status]) {
    const n = typeof v === 'number' ? v : typeof v === 'string' && THREE_DIGITS.test(v) ? Number(v) : undefined;
    if (n !== undefined && n >= 400 && n <= 499) return n;
  }
  for (const v of [e.type, e.code]) {
    const status = inBandStatusOf(v);
    if (status !== undefined) return status;
  }
  return 502;
}

/**
 * Whether an event's top-level `error` member reports an error: an object, a non-empty string or
 * `true`. Some providers send `"error": null` (or `false`, `""`) on every healthy event.
 */
export function reportsError(error: unknown): boolean {
  return typeof error === 'object' ? error !== null : error === true || (typeof error === 'string' && error !== '');
}
