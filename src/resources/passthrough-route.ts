// Pass-through route: claims a path prefix and/or inbound hosts and relays matching requests
// to one upstream (target_url, or the matched host with preserve_host), with a gateway
// authentication mode and an upstream credential mode. Spec 3 §2.1 holds the rules.

import { Type, type Static } from '@sinclair/typebox';
import {
  CREDENTIAL_HEADERS, Closed, HeaderGlob, LowercaseHeaderName, NonEmptyString, StringEnum, cidrError,
  normalizeHeaderList,
} from './common.ts';
import type { Report } from './issues.ts';

export const AUTH_MODES = ['gateway_key', 'header_key', 'anonymous'] as const;
export const CREDENTIAL_MODES = ['inject', 'forward_client'] as const;

/** `*.example.com` (one extra label, at least two literal labels), `api.example.com`, or `localhost`. */
export const HOST_PATTERN = '^(\\*\\.)?([A-Za-z0-9-]+\\.)+[A-Za-z0-9-]+$|^[A-Za-z0-9-]+$';

/** Prefixes a path-only route may not claim (the gateway's own endpoints). */
export const RESERVED_PREFIX = /^\/(v1|mcp|a2a|admin|livez|readyz|metrics)(\/|$)/;

export const PassthroughRouteSchema = Closed(
  {
    name: Type.Optional(NonEmptyString({ description: 'identity (exactly one of name / display_name)' })),
    display_name: Type.Optional(NonEmptyString({ description: 'alternative spelling of name' })),
    enabled: Type.Optional(Type.Boolean({ default: true })),
    path_prefix: Type.Optional(Type.String({ pattern: '^/', description: 'path prefix matched on segment boundaries' })),
    hosts: Type.Optional(Type.Array(Type.String({ pattern: HOST_PATTERN }), { minItems: 1, description: 'inbound Host allowlist, case-insensitive, port ignored' })),
    target_url: Type.Optional(Type.String({ pattern: '^https?://', description: 'upstream base URL' })),
    preserve_host: Type.Optional(Type.Boolean({ default: false, description: 'target https://<matched host>; requires hosts' })),
    auth_mode: Type.Optional(StringEnum(AUTH_MODES, { default: 'gateway_key' })),
    auth_header_name: Type.Optional(LowercaseHeaderName()),
    source_cidrs: Type.Optional(Type.Array(NonEmptyString(), { description: 'client source allowlist' })),
    credential_mode: Type.Optional(StringEnum(CREDENTIAL_MODES, { default: 'inject' })),
    provider_key_id: Type.Optional(NonEmptyString({ description: 'injected provider key (in a file: provider_key: <name>)' })),
    anonymous_key_id: Type.Optional(NonEmptyString({ description: 'caller principal for anonymous mode (in a file: anonymous_key: <name>)' })),
    forward_client_headers: Type.Optional(Type.Array(HeaderGlob(), { description: 'headers relayed even if stripped: exact names or single-* globs' })),
    identity_header: Type.Optional(LowercaseHeaderName()),
    timeout_ms: Type.Optional(Type.Integer({ minimum: 1, description: 'upstream exchange / stream idle bound in ms' })),
  },
  { title: 'passthrough_route', description: 'A pass-through route' },
);

export type PassthroughRouteDoc = Static<typeof PassthroughRouteSchema>;

function checkPathPrefix(prefix: string, report: Report): void {
  const at: ['path_prefix'] = ['path_prefix'];
  if (/[?#\s]/.test(prefix)) report(at, 'must be a plain path (no query, fragment or whitespace)');
  if (prefix.length > 1 && prefix.endsWith('/')) report(at, 'must not end with "/" (prefixes match on segment boundaries)');
  if (prefix.includes('//')) report(at, 'must not contain empty segments ("//")');
  const segments = prefix.split('/').map((s) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  });
  if (segments.some((s) => s === '.' || s === '..')) report(at, 'must not contain "." or ".." segments');
}

function checkTargetUrl(target: string, report: Report): void {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    report(['target_url'], 'must be an absolute http(s) URL');
    return;
  }
  if (url.hash || target.includes('#')) report(['target_url'], 'must not have a fragment');
  // Credentials belong in a provider key, where they are injected and never logged.
  if (url.username !== '' || url.password !== '') report(['target_url'], 'must not embed credentials (user:password@); use a provider key');
}

/** Headers the gateway never relays: they cannot carry a gateway key or an identity. */
const TRANSPORT_HEADERS = ['host', 'content-length', 'connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade'];

function checkHeaderSlot(field: 'auth_header_name' | 'identity_header', value: string, report: Report): void {
  if ((CREDENTIAL_HEADERS as readonly string[]).includes(value)) {
    report([field], `cannot be a credential header (${CREDENTIAL_HEADERS.join(', ')})`);
  } else if (TRANSPORT_HEADERS.includes(value)) {
    report([field], 'cannot be a hop-by-hop or transport header');
  }
}

/**
 * Spec 3 §2.1 rules JSON Schema cannot express. `written` holds the keys the file entry used,
 * so a problem with a key reference is reported under the spelling the user wrote
 * (`provider_key` or `provider_key_id`).
 */
export function checkPassthroughRoute(doc: PassthroughRouteDoc, report: Report, written: ReadonlySet<string> = new Set()): void {
  const pkField = written.has('provider_key_id') ? 'provider_key_id' : 'provider_key';
  const anonField = written.has('anonymous_key_id') ? 'anonymous_key_id' : 'anonymous_key';
  const hasHosts = doc.hosts !== undefined;
  if (doc.path_prefix === undefined && !hasHosts) report([], 'needs path_prefix, hosts or both');
  if (doc.path_prefix !== undefined) {
    checkPathPrefix(doc.path_prefix, report);
    // `/` would claim every path, the reserved ones included.
    if (!hasHosts && (RESERVED_PREFIX.test(doc.path_prefix) || doc.path_prefix === '/')) {
      report(['path_prefix'], 'a route without hosts cannot claim /v1, /mcp, /a2a, /admin, /livez, /readyz or /metrics');
    }
  }

  const preserve = doc.preserve_host === true;
  if (doc.target_url !== undefined && preserve) report(['preserve_host'], 'exactly one of target_url or preserve_host: true (both given)');
  if (doc.target_url === undefined && !preserve) report([], 'needs a target: target_url or preserve_host: true');
  if (preserve && !hasHosts) report(['preserve_host'], 'requires hosts');
  if (doc.target_url !== undefined) checkTargetUrl(doc.target_url, report);

  const auth = doc.auth_mode ?? 'gateway_key';
  if (auth === 'header_key' && doc.auth_header_name === undefined) report(['auth_header_name'], 'required when auth_mode is header_key');
  if (auth !== 'header_key' && doc.auth_header_name !== undefined) report(['auth_header_name'], 'only allowed when auth_mode is header_key');
  if (doc.auth_header_name !== undefined) checkHeaderSlot('auth_header_name', doc.auth_header_name, report);
  if (auth === 'anonymous') {
    if (doc.anonymous_key_id === undefined) report([anonField], 'required when auth_mode is anonymous (the API key the requests run as)');
    if (!doc.source_cidrs || doc.source_cidrs.length === 0) report(['source_cidrs'], 'required and non-empty when auth_mode is anonymous');
  } else if (doc.anonymous_key_id !== undefined) {
    report([anonField], 'only allowed when auth_mode is anonymous');
  }

  const cred = doc.credential_mode ?? 'inject';
  if (cred === 'inject' && doc.provider_key_id === undefined) report([pkField], 'required when credential_mode is inject (the default)');
  if (cred === 'forward_client' && doc.provider_key_id !== undefined) report([pkField], 'not allowed when credential_mode is forward_client');

  if (doc.identity_header !== undefined) {
    checkHeaderSlot('identity_header', doc.identity_header, report);
    if (doc.identity_header === doc.auth_header_name) report(['identity_header'], 'must differ from auth_header_name');
  }
  (doc.source_cidrs ?? []).forEach((c, i) => {
    const e = cidrError(c);
    if (e) report(['source_cidrs', i], e);
  });
  const seen = new Set<string>();
  (doc.hosts ?? []).forEach((h, i) => {
    const lower = h.toLowerCase();
    if (seen.has(lower)) report(['hosts', i], `duplicate host "${h}"`);
    seen.add(lower);
  });
}

/** Normalization after validation: the identity is always in `name`; header lists lowercased. */
export function normalizePassthroughRoute(doc: PassthroughRouteDoc): void {
  if (doc.name === undefined && doc.display_name !== undefined) doc.name = doc.display_name;
  delete doc.display_name;
  if (doc.hosts) doc.hosts = doc.hosts.map((h) => h.toLowerCase());
  if (doc.forward_client_headers) doc.forward_client_headers = normalizeHeaderList(doc.forward_client_headers);
}
