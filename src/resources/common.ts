// Schema building blocks shared by several resource kinds (rate limits, header names, CIDRs),
// plus the small semantic checkers that JSON Schema cannot express (CIDR and regex parsing).

import { Type, type Static, type TSchema, type TProperties, type ObjectOptions } from '@sinclair/typebox';
import { isIpOrCidr } from '../lib/source-cidrs.ts';
import { compileGatewayRegex } from '../lib/gateway-regex.ts';

/** Every object in every resource schema is closed: unknown keys are errors. */
export function Closed<T extends TProperties>(properties: T, options: ObjectOptions = {}) {
  return Type.Object(properties, { additionalProperties: false, ...options });
}

export const NonEmptyString = (options: { description?: string; maxLength?: number; default?: string } = {}) =>
  Type.String({ minLength: 1, ...options });

/** A string restricted to `values` (published as a JSON Schema `enum`). */
export function StringEnum<const T extends readonly string[]>(values: T, options: { default?: T[number]; description?: string } = {}) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
}

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const NonNegativeInt = (description?: string) =>
  Type.Integer({ minimum: 0, ...(description ? { description } : {}) });

/** Request/token/concurrency limits; every field is an integer ≥ 0 and optional. */
export const RateLimitSchema = Closed(
  {
    rps: Type.Optional(NonNegativeInt('requests per second (1 s window)')),
    rpm: Type.Optional(NonNegativeInt('requests per minute (60 s window)')),
    rph: Type.Optional(NonNegativeInt('requests per hour (3600 s window)')),
    rpd: Type.Optional(NonNegativeInt('requests per day (86400 s window)')),
    tpm: Type.Optional(NonNegativeInt('tokens per minute')),
    tpd: Type.Optional(NonNegativeInt('tokens per day')),
    concurrency: Type.Optional(NonNegativeInt('requests in flight at once')),
  },
  { description: 'Fixed-window limits, wall-clock aligned' },
);
export type RateLimit = Static<typeof RateLimitSchema>;

/** RFC 9110 token characters, without `*` (reserved for globs). */
const TCHAR = "A-Za-z0-9!#$%&'+.^_`|~-";
const TCHAR_LOWER = "a-z0-9!#$%&'+.^_`|~-";

/** A header name in any case (normalized to lowercase by the loader where noted). */
export const HeaderName = () => Type.String({ minLength: 1, pattern: `^[${TCHAR}]+$` });

/** A lowercase header name. */
export const LowercaseHeaderName = () => Type.String({ minLength: 1, pattern: `^[${TCHAR_LOWER}]+$` });

/** An exact header name or a glob with a single `*` (case-insensitive). */
export const HeaderGlob = () => Type.String({ minLength: 1, pattern: `^[${TCHAR}]*\\*?[${TCHAR}]*$` });

/** Header names that carry credentials; they cannot be used as gateway-key or identity slots. */
export const CREDENTIAL_HEADERS = ['authorization', 'proxy-authorization', 'cookie', 'set-cookie', 'x-api-key'] as const;

/** A CIDR (`10.0.0.0/8`, `::1/128`) or a bare IP address (one host). Null when valid. */
export function cidrError(value: string): string | null {
  return isIpOrCidr(value) ? null : 'must be a CIDR (e.g. 10.0.0.0/8) or an IP address, IPv4 as four decimal parts without leading zeros';
}

/** Null when `value` compiles with compileGatewayRegex (and these extra flags). */
export function regexError(value: string, extraFlags = ''): string | null {
  try {
    compileGatewayRegex(value, extraFlags);
    return null;
  } catch (err) {
    return `invalid regular expression: ${(err as Error).message.replace(/^Invalid regular expression: /, '')}`;
  }
}

/** Lowercase and de-duplicate header names, keeping first-seen order. */
export function normalizeHeaderList(list: readonly string[]): string[] {
  return [...new Set(list.map((h) => h.toLowerCase()))];
}
