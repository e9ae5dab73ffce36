// Turning upstream failures (values) into the GatewayError the caller sees (spec 2 §7).
import { http } from '../../http/node-http.ts';
import { GatewayError } from '../../lib/errors.ts';
import { headerValue, type HeaderRecord } from '../../lib/http-headers.ts';
import type { UpstreamFailure } from '../../http/upstream.ts';
import type { ClassifiedError } from '../providers/contract.ts';

export function statusLine(status: number): string {
  const reason = http.STATUS_CODES[status];
  return reason === undefined ? `upstream returned ${status}` : `upstream returned ${status} ${reason}`;
}

/**
 * `text` with every occurrence of the provider key's value masked: an upstream may echo the
 * credential it was sent ("Incorrect API key provided: ..."), and the caller must never see it.
 */
export function withoutKey(text: string, key: string): string {
  return key.length < 8 || !text.includes(key) ? text : text.replaceAll(key, '[REDACTED]');
}

/**
 * Upstream 4xx keep their status and the upstream's own message (the provider key masked), type,
 * param and code; 5xx (and anything else that is not a success) become 502 with the status line
 * only, so provider internals never leak (an overload keeps its type); 429 relays the retry hint (Retry-After, retry-after-ms).
 */
export function upstreamStatusError(status: number, c: ClassifiedError, key: string): GatewayError {
  if (status >= 400 && status < 500) {
    const headers: Record<string, string> = {};
    if (status === 429 && c.retryAfterMs !== undefined) {
      headers['retry-after'] = String(Math.ceil(c.retryAfterMs / 1000));
      // Both SDKs read this first: a sub-second hint is kept exact rather than rounded up.
      headers['retry-after-ms'] = String(c.retryAfterMs);
    }
    return new GatewayError('upstream_error', c.message === undefined ? statusLine(status) : withoutKey(c.message, key), {
      status,
      type: c.type ?? 'upstream_error',
      publicCode: c.code ?? null,
      param: c.param ?? null,
      headers,
    });
  }
  // An overload is the one 5xx type a caller acts on (back off, try elsewhere), and it says nothing
  // of the provider's internals: Anthropic's 529 (and some 503s) keep `overloaded_error`.
  return new GatewayError('upstream_error', statusLine(status), c.type === OVERLOADED ? { type: OVERLOADED } : undefined);
}

const OVERLOADED = 'overloaded_error';

/**
 * An upstream's `x-should-retry` header (OpenAI and Anthropic send it; both SDKs obey it): true or
 * false when it says so, else undefined.
 */
export function shouldRetryOf(headers: HeaderRecord): boolean | undefined {
  const s = headerValue(headers, 'x-should-retry');
  return s === 'true' ? true : s === 'false' ? false : undefined;
}

export function upstreamFailureError(f: UpstreamFailure): GatewayError {
  if (f.kind === 'timeout') return new GatewayError('upstream_timeout', f.message);
  if (f.kind === 'decode') return new GatewayError('upstream_decode', f.message);
  return new GatewayError('upstream_transport', f.message);
}

/** Vocabulary shared by the access log's error_kind and usage events' error_class. */
export function failureKind(f: UpstreamFailure): string {
  if (f.kind === 'timeout') return 'timeout';
  if (f.kind === 'aborted') return 'client_disconnected';
  if (f.kind === 'decode') return 'upstream_decode';
  return 'transport';
}
