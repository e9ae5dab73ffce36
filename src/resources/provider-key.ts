// Provider key: an upstream credential plus how requests using it are shaped (base URL,
// renamed parameters, default headers and body fields, stripped headers, TLS trust).

import { Type, type Static } from '@sinclair/typebox';
import { Closed, HeaderGlob, HeaderName, NonEmptyString, Nullable, StringEnum } from './common.ts';
import type { Report } from './issues.ts';
import { compileDefaultHeaders } from '../lib/default-headers.ts';

export const PROVIDER_ADAPTERS = ['openai', 'anthropic', 'bedrock', 'vertex', 'azure-openai'] as const;

export const DEFAULT_STRIP_HEADERS = ['authorization', 'cookie', 'set-cookie', 'x-api-key'];

export const ProviderKeyRequestSchema = Closed(
  {
    param_renames: Type.Optional(Type.Record(Type.String(), NonEmptyString(), {
      description: 'top-level request body keys to rename (from → to); wins over built-in renames',
    })),
    param_constraints: Type.Optional(Closed({
      temperature_min: Type.Optional(Type.Number()),
      temperature_max: Type.Optional(Type.Number()),
    }, { description: 'clamps applied to request parameters' })),
    default_headers: Type.Optional(Type.Record(Type.String(), Type.String(), {
      description: 'headers added to upstream requests when absent',
    })),
    forward_client_headers: Type.Optional(Type.Array(HeaderGlob(), {
      description: 'caller headers relayed upstream: exact names or single-* globs, case-insensitive',
    })),
    default_body_fields: Type.Optional(Type.Record(Type.String(), Type.Unknown(), {
      description: 'top-level body fields added when absent',
    })),
  },
  { description: 'request shaping' },
);

export const ProviderKeySchema = Closed(
  {
    display_name: NonEmptyString({ description: 'identity of the provider key' }),
    provider: Type.Optional(Type.String({
      default: '',
      maxLength: 64,
      pattern: '^([a-z0-9][a-z0-9._-]*)?$',
      description: 'vendor label (openai, anthropic, ...)',
    })),
    adapter: Type.Optional(Nullable(StringEnum(PROVIDER_ADAPTERS, {
      description: 'wire family for vendors not known by label',
    }))),
    api_key: NonEmptyString({ description: 'upstream credential (use ${VAR})' }),
    api_base: Type.Optional(Nullable(Type.String({ minLength: 1, description: 'upstream base URL' }))),
    request: Type.Optional(ProviderKeyRequestSchema),
    response: Type.Optional(Closed({
      content_list_to_string: Type.Optional(Type.Boolean()),
      reasoning_field: Type.Optional(NonEmptyString()),
      stream_done_marker: Type.Optional(StringEnum(['required', 'optional', 'none'])),
      error_envelope: Type.Optional(NonEmptyString()),
    }, { description: 'response shaping' })),
    strip_headers: Type.Optional(Type.Array(HeaderName(), {
      default: DEFAULT_STRIP_HEADERS,
      description: 'inbound headers stripped before the credential is injected (lowercased, de-duplicated)',
    })),
    allowed_environments: Type.Optional(Type.Array(NonEmptyString(), {
      description: 'environment ids the key is visible to',
    })),
    telemetry_tags: Type.Optional(Closed({
      kind: Type.Optional(StringEnum(['catalog', 'byo'])),
      featured: Type.Optional(Type.Boolean({ default: false })),
      branded_provider: Type.Optional(Type.String()),
      pk_label: Type.Optional(Type.String()),
      byo_label: Type.Optional(Type.String()),
    }, { description: 'labels only' })),
    tls: Type.Optional(Closed({
      ca_cert: Type.Optional(NonEmptyString({ description: 'inline PEM bundle trusted for this key' })),
      verify: Type.Optional(Type.Boolean({ default: true })),
    }, { description: 'upstream TLS trust' })),
  },
  { title: 'provider_key', description: 'An upstream provider credential' },
);

export type ProviderKeyDoc = Static<typeof ProviderKeySchema>;

/** Wire families whose api_key may be a JSON document (a service account, AWS or AAD credentials), parsed rather than sent. */
const JSON_CREDENTIAL_FAMILIES = new Set(['vertex', 'bedrock', 'azure-openai']);

/** C0 controls and DEL: an HTTP client refuses a header value carrying one (CR and LF would split the header). */
const CONTROL_CHARACTER = /[\x00-\x1f\x7f]/;
/** Characters a header value cannot hold at all (HTTP header values are bytes). */
const BEYOND_LATIN1 = /[^\x00-\xff]/;

/**
 * Whether api_key can go into an upstream header as it is. A JSON credential of the families that
 * parse one may span lines (JSON whitespace); a JSON string inside it cannot hold a raw control
 * character, so a document that parses carries none where it matters.
 */
function credentialSendable(doc: ProviderKeyDoc): boolean {
  if (!CONTROL_CHARACTER.test(doc.api_key)) return true;
  if (!JSON_CREDENTIAL_FAMILIES.has(doc.adapter ?? doc.provider ?? '')) return false;
  try {
    const parsed: unknown = JSON.parse(doc.api_key);
    return typeof parsed === 'object' && parsed !== null;
  } catch {
    return false;
  }
}

/** Checks JSON Schema cannot express. */
export function checkProviderKey(doc: ProviderKeyDoc, report: Report): void {
  // Refused now rather than as a 502 on every request; the message never quotes the credential.
  if (typeof doc.api_key === 'string' && !credentialSendable(doc)) report(['api_key'], 'must not contain control characters');
  else if (typeof doc.api_key === 'string' && !JSON_CREDENTIAL_FAMILIES.has(doc.adapter ?? doc.provider ?? '') && BEYOND_LATIN1.test(doc.api_key)) {
    // A pasted "…" or a smart quote: no HTTP header can carry it.
    report(['api_key'], 'must not contain characters above U+00FF (no header can carry them)');
  }
  if (typeof doc.api_base === 'string') {
    const base = doc.api_base.trim();
    let url: URL | undefined;
    try {
      url = new URL(base);
    } catch {
      report(['api_base'], 'must be an absolute http(s) URL');
    }
    if (url && url.protocol !== 'http:' && url.protocol !== 'https:') report(['api_base'], 'must be an http or https URL');
    if (url && doc.adapter === 'azure-openai' && url.search) report(['api_base'], 'must not carry a query for azure-openai (the api-version is added by the gateway)');
  }
  if (doc.tls?.ca_cert !== undefined && !doc.tls.ca_cert.includes('-----BEGIN CERTIFICATE-----')) {
    report(['tls', 'ca_cert'], 'must be an inline PEM certificate bundle (-----BEGIN CERTIFICATE-----)');
  }
  const c = doc.request?.param_constraints;
  if (c?.temperature_min !== undefined && c.temperature_max !== undefined && c.temperature_min > c.temperature_max) {
    report(['request', 'param_constraints'], 'temperature_min must not exceed temperature_max');
  }
  for (const [from, to] of Object.entries(doc.request?.param_renames ?? {})) {
    if (from === to) report(['request', 'param_renames', from], 'renames a parameter to itself');
  }
  // A default header that could never be sent is a mistake to name now, not a header silently missing upstream.
  for (const p of compileDefaultHeaders(doc.request?.default_headers).problems) report(['request', 'default_headers', p.key], p.message);
}

/** Normalization after validation: strip_headers lowercased and de-duplicated. */
export function normalizeProviderKey(doc: ProviderKeyDoc): void {
  if (doc.strip_headers) doc.strip_headers = [...new Set(doc.strip_headers.map((h) => h.toLowerCase()))];
  if (doc.request?.forward_client_headers) {
    doc.request.forward_client_headers = [...new Set(doc.request.forward_client_headers.map((h) => h.toLowerCase()))];
  }
}
