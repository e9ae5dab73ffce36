// GatewayError: the one error type of the data planes, and the catalogue of its codes.
// Every code here is documented in docs/errors.md (a test checks that).

export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'rate_limit_error'
  | 'upstream_error'
  | 'timeout_error'
  | 'api_error';

export interface ErrorSpec {
  status: number;
  type: ErrorType;
  /** May the message be shown to the caller. Internal failures show a generic text. */
  expose: boolean;
  retryable: boolean;
}

/** Stable error codes, their HTTP status and client-facing type. */
export const ERROR_CODES = {
  missing_api_key: { status: 401, type: 'authentication_error', expose: true, retryable: false },
  invalid_api_key: { status: 401, type: 'authentication_error', expose: true, retryable: false },
  api_key_disabled: { status: 401, type: 'authentication_error', expose: true, retryable: false },
  api_key_expired: { status: 401, type: 'authentication_error', expose: true, retryable: false },
  model_access_forbidden: { status: 403, type: 'invalid_request_error', expose: true, retryable: false },
  model_not_found: { status: 404, type: 'invalid_request_error', expose: true, retryable: false },
  invalid_request: { status: 400, type: 'invalid_request_error', expose: true, retryable: false },
  invalid_json: { status: 400, type: 'invalid_request_error', expose: true, retryable: false },
  invalid_role: { status: 400, type: 'invalid_request_error', expose: true, retryable: false },
  request_too_large: { status: 413, type: 'invalid_request_error', expose: true, retryable: false },
  method_not_allowed: { status: 405, type: 'invalid_request_error', expose: true, retryable: false },
  not_implemented: { status: 501, type: 'invalid_request_error', expose: true, retryable: false },
  provider_unavailable: { status: 503, type: 'api_error', expose: true, retryable: true },
  all_candidates_unavailable: { status: 503, type: 'api_error', expose: true, retryable: true },
  upstream_error: { status: 502, type: 'upstream_error', expose: true, retryable: true },
  upstream_timeout: { status: 504, type: 'timeout_error', expose: true, retryable: true },
  upstream_transport: { status: 502, type: 'upstream_error', expose: true, retryable: true },
  upstream_decode: { status: 502, type: 'upstream_error', expose: true, retryable: true },
  stream_aborted: { status: 502, type: 'upstream_error', expose: true, retryable: false },
  shutting_down: { status: 503, type: 'api_error', expose: true, retryable: true },
  overloaded: { status: 503, type: 'api_error', expose: true, retryable: true },
  unsafe_path: { status: 400, type: 'invalid_request_error', expose: true, retryable: false },
  query_conflict: { status: 400, type: 'invalid_request_error', expose: true, retryable: false },
  route_access_forbidden: { status: 403, type: 'permission_error', expose: true, retryable: false },
  ip_restricted: { status: 403, type: 'permission_error', expose: true, retryable: false },
  route_unavailable: { status: 503, type: 'api_error', expose: true, retryable: true },
  rate_limit_exceeded: { status: 429, type: 'rate_limit_error', expose: true, retryable: true },
  rate_limit_lease_lost: { status: 429, type: 'rate_limit_error', expose: true, retryable: true },
  rate_limit_unavailable: { status: 503, type: 'api_error', expose: true, retryable: true },
  internal_error: { status: 500, type: 'api_error', expose: false, retryable: false },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface GatewayErrorOptions {
  /** Override the catalogued status (an upstream 4xx keeps its own status). */
  status?: number;
  /** Override the catalogued type (an upstream's own error type is relayed). */
  type?: string;
  /** The code shown to the caller when it differs from the catalogue code (upstream codes). */
  publicCode?: string | null;
  param?: string | null;
  /** Headers to add to the error response (Retry-After, Allow). */
  headers?: Record<string, string>;
  /** The rate-limit policy that refused the request: `error.policy` in every envelope. */
  policy?: ErrorPolicy;
  cause?: unknown;
}

export interface ErrorPolicy {
  readonly id: string;
  readonly name: string;
}

export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly type: string;
  readonly retryable: boolean;
  readonly expose: boolean;
  readonly publicCode: string | null;
  readonly param: string | null;
  readonly headers: Record<string, string> | undefined;
  readonly policy: ErrorPolicy | undefined;

  constructor(code: ErrorCode, message: string, options: GatewayErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    const spec: ErrorSpec = ERROR_CODES[code];
    this.name = 'GatewayError';
    this.code = code;
    this.status = options.status ?? spec.status;
    this.type = options.type ?? spec.type;
    this.retryable = spec.retryable;
    this.expose = spec.expose;
    this.publicCode = options.publicCode === undefined ? code : options.publicCode;
    this.param = options.param ?? null;
    this.headers = options.headers;
    this.policy = options.policy;
  }

  /** The text a caller may see. */
  get publicMessage(): string {
    return this.expose ? this.message : 'internal gateway error';
  }
}

export function isGatewayError(err: unknown): err is GatewayError {
  return err instanceof GatewayError;
}
