import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { deriveId } from './ids.ts';
import { PK, assertErrors, expectOk, loadObj } from './test-helpers.ts';
import type { LoadResult } from './loader.ts';

const ANON = { display_name: 'anon', key_hash: createHash('sha256').update('anon').digest('hex'), allowed_models: [], allowed_routes: ['*'] };
const base = { name: 'r', path_prefix: '/passthrough/x', target_url: 'https://api.example.com/v1', provider_key: 'pk' };

function load(route: Record<string, unknown>): LoadResult {
  return loadObj({ provider_keys: [PK], api_keys: [ANON], passthrough_routes: [route] });
}

/** Errors of a single route, scope prefix removed. */
function routeErrors(route: Record<string, unknown>, name = 'r'): (expected: string[]) => void {
  return (expected) => assertErrors(load(route), expected.map((e) => `passthrough_routes[0] ("${name}")${e}`));
}

test('a route loads with defaults and the provider key resolved to its id', () => {
  const r = expectOk(load(base)).passthrough_routes[0];
  assert.deepEqual(r, {
    id: deriveId('passthrough_routes', 'r'),
    name: 'r',
    path_prefix: '/passthrough/x',
    target_url: 'https://api.example.com/v1',
    provider_key_id: deriveId('provider_keys', 'pk'),
    enabled: true,
    preserve_host: false,
    auth_mode: 'gateway_key',
    credential_mode: 'inject',
  });
});

test('needs at least one of path_prefix and hosts', () => {
  const { path_prefix: _p, ...noPrefix } = base;
  routeErrors(noPrefix)([': needs path_prefix, hosts or both']);
  expectOk(load({ ...noPrefix, hosts: ['api.example.com'] }));
});

test('hosts: host names, one leading *. wildcard with at least two literal labels, no duplicates', () => {
  expectOk(load({ ...base, hosts: ['api.example.com', '*.githubcopilot.com', 'localhost', 'API.Example.org'] }));
  routeErrors({ ...base, hosts: ['*.com', 'a.*.com', 'ex ample.com', 'https://x.com', 'a.example.com', 'A.example.com'] })([
    '.hosts[0]: must be a host name (a leading "*." wildcard needs at least two more labels, e.g. *.example.com)',
    '.hosts[1]: must be a host name (a leading "*." wildcard needs at least two more labels, e.g. *.example.com)',
    '.hosts[2]: must be a host name (a leading "*." wildcard needs at least two more labels, e.g. *.example.com)',
    '.hosts[3]: must be a host name (a leading "*." wildcard needs at least two more labels, e.g. *.example.com)',
    '.hosts[5]: duplicate host "A.example.com"',
  ]);
  routeErrors({ ...base, hosts: [] })(['.hosts: must have at least 1 item']);
});

test('hosts are lowercased', () => {
  const r = expectOk(load({ ...base, hosts: ['API.Example.com'] })).passthrough_routes[0];
  assert.deepEqual(r.hosts, ['api.example.com']);
});

test('a path-only route cannot claim the gateway\'s own prefixes; a host route may', () => {
  for (const p of ['/v1', '/v1/files', '/mcp', '/a2a/x', '/admin', '/livez', '/readyz', '/metrics', '/']) {
    routeErrors({ ...base, path_prefix: p })([
      '.path_prefix: a route without hosts cannot claim /v1, /mcp, /a2a, /admin, /livez, /readyz or /metrics',
    ]);
    expectOk(load({ ...base, path_prefix: p, hosts: ['agent.example.com'] }));
  }
  // Only whole segments are reserved.
  expectOk(load({ ...base, path_prefix: '/v10' }));
  expectOk(load({ ...base, path_prefix: '/mcpx/y' }));
});

test('path_prefix: starts with /, no query, trailing slash, empty or dot segments', () => {
  routeErrors({ ...base, path_prefix: 'x' })(['.path_prefix: must start with "/"']);
  routeErrors({ ...base, path_prefix: '/x?y=1' })(['.path_prefix: must be a plain path (no query, fragment or whitespace)']);
  routeErrors({ ...base, path_prefix: '/x/' })(['.path_prefix: must not end with "/" (prefixes match on segment boundaries)']);
  routeErrors({ ...base, path_prefix: '/a//b' })(['.path_prefix: must not contain empty segments ("//")']);
  routeErrors({ ...base, path_prefix: '/a/%2e%2e/b' })(['.path_prefix: must not contain "." or ".." segments']);
});

test('exactly one target: target_url or preserve_host: true (which requires hosts)', () => {
  const { target_url: _t, ...noTarget } = base;
  routeErrors(noTarget)([': needs a target: target_url or preserve_host: true']);
  routeErrors({ ...base, preserve_host: true, hosts: ['a.example.com'] })(['.preserve_host: exactly one of target_url or preserve_host: true (both given)']);
  routeErrors({ ...noTarget, preserve_host: true })(['.preserve_host: requires hosts']);
  expectOk(load({ ...noTarget, preserve_host: true, hosts: ['*.githubcopilot.com'], path_prefix: '/mcp' }));
});

test('target_url: absolute http(s) URL without a fragment; a query is allowed', () => {
  routeErrors({ ...base, target_url: 'ftp://x' })(['.target_url: must be an http:// or https:// URL']);
  routeErrors({ ...base, target_url: 'https://' })(['.target_url: must be an absolute http(s) URL']);
  routeErrors({ ...base, target_url: 'https://x.example.com/v1#frag' })(['.target_url: must not have a fragment']);
  expectOk(load({ ...base, target_url: 'http://10.0.0.1:8080/base?api-version=1' }));
  routeErrors({ ...base, target_url: 'https://user:secret@x.example.com/v1' })(['.target_url: must not embed credentials (user:password@); use a provider key']);
});

test('auth_header_name and identity_header cannot be hop-by-hop or transport headers', () => {
  routeErrors({ ...base, auth_mode: 'header_key', auth_header_name: 'host', credential_mode: 'forward_client', provider_key: undefined })([
    '.auth_header_name: cannot be a hop-by-hop or transport header',
  ]);
  routeErrors({ ...base, identity_header: 'connection' })(['.identity_header: cannot be a hop-by-hop or transport header']);
});

test('allowed_routes: exact entries must name a route of the file; wildcards are not checked', () => {
  const key = (routes: string[]) => ({ ...ANON, display_name: 'caller', key_hash: createHash('sha256').update('c').digest('hex'), allowed_routes: routes });
  expectOk(loadObj({ provider_keys: [PK], api_keys: [key(['r', 'team-*', '*'])], passthrough_routes: [base] }));
  assertErrors(loadObj({ provider_keys: [PK], api_keys: [key(['ghost'])], passthrough_routes: [base] }), [
    'api_keys[0] ("caller").allowed_routes[0]: unknown pass-through route "ghost"',
  ]);
});

test('provider_key and anonymous_key resolve by display name or explicit derived id', () => {
  const byId = expectOk(load({ ...base, provider_key: undefined, provider_key_id: deriveId('provider_keys', 'pk') })).passthrough_routes[0];
  assert.equal(byId.provider_key_id, deriveId('provider_keys', 'pk'));
  routeErrors({ ...base, provider_key: undefined, provider_key_id: 'not-an-id' })([
    '.provider_key_id: no provider key in this file has id "not-an-id" (ids are derived; reference it by name instead)',
  ]);
});

test('auth_header_name is required for and only allowed with header_key; lowercase; not a credential header', () => {
  routeErrors({ ...base, auth_mode: 'header_key' })(['.auth_header_name: required when auth_mode is header_key']);
  routeErrors({ ...base, auth_header_name: 'x-gw-key' })(['.auth_header_name: only allowed when auth_mode is header_key']);
  routeErrors({ ...base, auth_mode: 'header_key', auth_header_name: 'X-Gw-Key' })(['.auth_header_name: must be a lowercase header name']);
  for (const h of ['authorization', 'proxy-authorization', 'cookie', 'set-cookie', 'x-api-key']) {
    routeErrors({ ...base, auth_mode: 'header_key', auth_header_name: h })([
      '.auth_header_name: cannot be a credential header (authorization, proxy-authorization, cookie, set-cookie, x-api-key)',
    ]);
  }
  expectOk(load({ ...base, auth_mode: 'header_key', auth_header_name: 'x-gw-key', credential_mode: 'forward_client', provider_key: undefined }));
});

test('anonymous needs anonymous_key and non-empty source_cidrs; anonymous_key only with anonymous', () => {
  routeErrors({ ...base, auth_mode: 'anonymous' })([
    '.anonymous_key: required when auth_mode is anonymous (the API key the requests run as)',
    '.source_cidrs: required and non-empty when auth_mode is anonymous',
  ]);
  routeErrors({ ...base, auth_mode: 'anonymous', anonymous_key: 'anon', source_cidrs: [] })([
    '.source_cidrs: required and non-empty when auth_mode is anonymous',
  ]);
  routeErrors({ ...base, anonymous_key: 'anon' })(['.anonymous_key: only allowed when auth_mode is anonymous']);
  const r = expectOk(load({ ...base, auth_mode: 'anonymous', anonymous_key: 'anon', source_cidrs: ['10.0.0.0/8', '::1'] })).passthrough_routes[0];
  assert.equal(r.anonymous_key_id, deriveId('api_keys', 'anon'));
});

test('anonymous_key must name an API key; an explicit anonymous_key_id must be a derived id', () => {
  routeErrors({ ...base, auth_mode: 'anonymous', anonymous_key: 'ghost', source_cidrs: ['10.0.0.0/8'] })([
    '.anonymous_key: unknown API key "ghost"',
  ]);
  expectOk(load({ ...base, auth_mode: 'anonymous', anonymous_key_id: deriveId('api_keys', 'anon'), source_cidrs: ['10.0.0.0/8'] }));
  routeErrors({ ...base, auth_mode: 'anonymous', anonymous_key_id: 'nope', source_cidrs: ['10.0.0.0/8'] })([
    '.anonymous_key_id: no API key in this file has id "nope" (ids are derived; reference it by name instead)',
  ]);
});

test('source_cidrs must be CIDRs or addresses', () => {
  routeErrors({ ...base, source_cidrs: ['10.0.0.0/33', 'nope'] })([
    '.source_cidrs[0]: must be a CIDR (e.g. 10.0.0.0/8) or an IP address, IPv4 as four decimal parts without leading zeros',
    '.source_cidrs[1]: must be a CIDR (e.g. 10.0.0.0/8) or an IP address, IPv4 as four decimal parts without leading zeros',
  ]);
  // Forms a parser reads as another network than a reader sees: 192.168.010.0/24 is 192.168.8.0/24 in octal.
  routeErrors({ ...base, source_cidrs: ['192.168.010.0/24', '10.1', '0x0a.0.0.1', '167772161'] })(
    [0, 1, 2, 3].map((i) => `.source_cidrs[${i}]: must be a CIDR (e.g. 10.0.0.0/8) or an IP address, IPv4 as four decimal parts without leading zeros`),
  );
});

test('inject requires a provider key; forward_client forbids one', () => {
  const { provider_key: _k, ...noKey } = base;
  routeErrors(noKey)(['.provider_key: required when credential_mode is inject (the default)']);
  routeErrors({ ...base, credential_mode: 'forward_client' })(['.provider_key: not allowed when credential_mode is forward_client']);
  routeErrors({ ...noKey, provider_key_id: deriveId('provider_keys', 'pk'), credential_mode: 'forward_client' })([
    '.provider_key_id: not allowed when credential_mode is forward_client',
  ]);
  routeErrors({ ...base, provider_key: 'ghost' })(['.provider_key: unknown provider key "ghost"']);
  expectOk(load({ ...noKey, credential_mode: 'forward_client' }));
});

test('identity_header: lowercase, not a credential header, not the auth header', () => {
  routeErrors({ ...base, identity_header: 'X-User' })(['.identity_header: must be a lowercase header name']);
  routeErrors({ ...base, identity_header: 'cookie' })([
    '.identity_header: cannot be a credential header (authorization, proxy-authorization, cookie, set-cookie, x-api-key)',
  ]);
  routeErrors({ ...base, auth_mode: 'header_key', auth_header_name: 'x-k', identity_header: 'x-k' })(['.identity_header: must differ from auth_header_name']);
  expectOk(load({ ...base, identity_header: 'x-tollgate-user' }));
});

test('forward_client_headers: names or single-* globs, lowercased and de-duplicated', () => {
  const r = expectOk(load({ ...base, forward_client_headers: ['X-Trace-*', 'x-trace-*', 'Authorization'] })).passthrough_routes[0];
  assert.deepEqual(r.forward_client_headers, ['x-trace-*', 'authorization']);
  routeErrors({ ...base, forward_client_headers: ['x-*-*', 'bad header'] })([
    '.forward_client_headers[0]: must be a header name or a glob with one "*"',
    '.forward_client_headers[1]: must be a header name or a glob with one "*"',
  ]);
});

test('timeout_ms is an integer >= 1; enabled is a boolean; unknown fields are rejected', () => {
  routeErrors({ ...base, timeout_ms: 0 })(['.timeout_ms: must be >= 1']);
  routeErrors({ ...base, timeout_ms: 1.5 })(['.timeout_ms: must be an integer']);
  routeErrors({ ...base, enabled: 'yes' })(['.enabled: must be a boolean (true or false)']);
  routeErrors({ ...base, protocol: 'openai' })(['.protocol: unknown field']);
  assert.equal(expectOk(load({ ...base, enabled: false })).passthrough_routes[0].enabled, false);
});

test('auth_mode and credential_mode are enums', () => {
  routeErrors({ ...base, auth_mode: 'jwt', credential_mode: 'both' })([
    '.auth_mode: must be one of: gateway_key, header_key, anonymous',
    '.credential_mode: must be one of: inject, forward_client',
  ]);
});
