// The failures a pass-through request can end with, as values: a stable code, the HTTP status,
// the client-facing type and a message safe to show. Rendered in the gateway error envelope
// (`{error:{message,type,param,code}}`); an unclaimed path is the only answer without one (an
// empty 404, answered by the proxy listener itself).
import { ERROR_CODES, isGatewayError, type ErrorCode, type ErrorPolicy } from '../lib/errors.ts';

export interface PassthroughError {
  readonly code: string;
  readonly status: number;
  readonly type: string;
  readonly message: string;
  /** Extra response headers (Retry-After, Connection: close). */
  readonly headers?: Record<string, string>;
  /** The rate-limit policy that refused the request (`error.policy`). */
  readonly policy?: ErrorPolicy;
}

/** Codes the pass-through data plane produces itself; specs live in the one catalogue (lib/errors.ts). */
export type PassthroughErrorCode = Extract<
  ErrorCode,
  | 'unsafe_path' | 'query_conflict' | 'missing_api_key' | 'invalid_api_key' | 'api_key_disabled' | 'api_key_expired'
  | 'route_access_forbidden' | 'ip_restricted' | 'route_unavailable' | 'upstream_transport' | 'upstream_timeout' | 'internal_error'
>;

export function passthroughError(code: PassthroughErrorCode, message: string, headers?: Record<string, string>): PassthroughError {
  const spec = ERROR_CODES[code];
  return headers === undefined ? { code, status: spec.status, type: spec.type, message } : { code, status: spec.status, type: spec.type, message, headers };
}

/** A thrown value (a GatewayError from body reading, or a bug) as a pass-through failure. */
export function toPassthroughError(err: unknown): PassthroughError {
  if (isGatewayError(err)) {
    return { code: err.publicCode ?? err.code, status: err.status, type: err.type, message: err.publicMessage, headers: err.headers };
  }
  return passthroughError('internal_error', 'internal gateway error');
}

/** The gateway error envelope. */
export function errorEnvelope(e: PassthroughError): string {
  const error = e.policy === undefined
    ? { message: e.message, type: e.type, param: null, code: e.code }
    : { message: e.message, type: e.type, param: null, code: e.code, policy: e.policy };
  return JSON.stringify({ error });
}

/**
 * The frame that ends an event stream the gateway had to cut after its head was sent. The
 * leading blank line closes any frame the upstream left open, so the error is its own event.
 */
export function errorFrame(e: PassthroughError): string {
  return `\n\nevent: error\ndata: ${errorEnvelope(e)}\n\n`;
}
