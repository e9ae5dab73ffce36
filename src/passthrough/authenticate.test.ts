import { test } from 'node:test';
import assert from 'node:assert/strict';
import { authenticateRoute } from './authenticate.ts';
import { compileRoutes, type CompiledRoute } from './compile-routes.ts';
import { sha256, snapshotOf } from './test-helpers.ts';

const T = 'https://up.example.com';
const snapshot = snapshotOf({
  api_keys: [
    { display_name: 'all', key_hash: sha256('k-all'), allowed_models: [], allowed_routes: ['*'] },
    { display_name: 'files', key_hash: sha256('k-files'), allowed_models: [], allowed_routes: ['files', 'team-*'] },
    { display_name: 'none', key_hash: sha256('k-none'), allowed_models: [] },
    { display_name: 'off', key_hash: sha256('k-off'), allowed_models: [], allowed_routes: ['*'], disabled: true },
    { display_name: 'old', key_hash: sha256('k-old'), allowed_models: [], allowed_routes: ['*'], expires_at: '2001-01-01T00:00:00Z' },
    { display_name: 'anon', key_hash: sha256('k-anon'), allowed_models: [], allowed_routes: ['tunnel'] },
  ],
  passthrough_routes: [
    { name: 'files', path_prefix: '/files', target_url: T, provider_key: 'pk' },
    { name: 'team-x', path_prefix: '/team-x', target_url: T, provider_key: 'pk' },
    { name: 'other', path_prefix: '/other', target_url: T, provider_key: 'pk' },
    { name: 'hdr', path_prefix: '/hdr', target_url: T, auth_mode: 'header_key', auth_header_name: 'x-gw-key', credential_mode: 'forward_client' },
    { name: 'tunnel', path_prefix: '/tunnel', target_url: T, auth_mode: 'anonymous', anonymous_key: 'anon', source_cidrs: ['10.0.0.0/8'], provider_key: 'pk' },
    { name: 'anywhere', path_prefix: '/anywhere', target_url: T, auth_mode: 'anonymous', anonymous_key: 'anon', source_cidrs: ['0.0.0.0/0'], provider_key: 'pk' },
    { name: 'walled', path_prefix: '/walled', target_url: T, provider_key: 'pk', source_cidrs: ['192.168.0.0/16'] },
  ],
});
const routes = compileRoutes(snapshot);
const byName = (n: string): CompiledRoute => [...routes.pathOnly.values()].find((r) => r.name === n)!;

function auth(route: string, headers: Record<string, string>, ip = '127.0.0.1'): string {
  const out = authenticateRoute(byName(route), routes, snapshot, headers, ip);
  return out.ok ? `ok ${out.key.name}${out.anonymous ? ' anonymous' : ''}` : `${out.error.status} ${out.error.code} ${out.error.message}`;
}

test('gateway_key reads Authorization: Bearer or x-api-key', () => {
  assert.equal(auth('files', { authorization: 'Bearer k-all' }), 'ok all');
  assert.equal(auth('files', { authorization: 'bearer k-all' }), 'ok all');
  assert.equal(auth('files', { 'x-api-key': 'k-all' }), 'ok all');
  // A non-Bearer Authorization (a Basic credential for someone else) leaves x-api-key to speak.
  assert.equal(auth('files', { authorization: 'Basic Zm9vOmJhcg==', 'x-api-key': 'k-all' }), 'ok all');
  // So does a Bearer token that is not a gateway key (the caller's own upstream token).
  assert.equal(auth('files', { authorization: 'Bearer upstream-token', 'x-api-key': 'k-files' }), 'ok files');
  assert.equal(auth('files', { authorization: 'Bearer upstream-token', 'x-api-key': 'nope' }), '401 invalid_api_key Invalid API key');
});

test('gateway_key: missing, unknown, disabled and expired credentials are 401', () => {
  assert.equal(auth('files', {}), '401 missing_api_key Missing API key in request');
  assert.equal(auth('files', { authorization: 'k-all' }), '401 missing_api_key Missing API key in request');
  assert.equal(auth('files', { authorization: 'Bearer nope' }), '401 invalid_api_key Invalid API key');
  assert.equal(auth('files', { authorization: 'Bearer k-off' }), '401 api_key_disabled API key has been disabled');
  assert.equal(auth('files', { authorization: 'Bearer k-old' }), '401 api_key_expired API key has expired');
});

test('the route grant: exact names, globs and * ; none or another route is 403', () => {
  assert.equal(auth('files', { authorization: 'Bearer k-files' }), 'ok files');
  assert.equal(auth('team-x', { authorization: 'Bearer k-files' }), 'ok files');
  assert.equal(auth('other', { authorization: 'Bearer k-all' }), 'ok all');
  assert.equal(auth('other', { authorization: 'Bearer k-files' }), '403 route_access_forbidden API key is not allowed to use passthrough route "other"');
  assert.equal(auth('files', { authorization: 'Bearer k-none' }), '403 route_access_forbidden API key is not allowed to use passthrough route "files"');
});

test('header_key reads only the named header (Bearer tolerated), leaving Authorization alone', () => {
  assert.equal(auth('hdr', { 'x-gw-key': 'k-all', authorization: 'Bearer employee-token' }), 'ok all');
  assert.equal(auth('hdr', { 'x-gw-key': 'Bearer k-all' }), 'ok all');
  assert.equal(auth('hdr', { authorization: 'Bearer k-all' }), '401 missing_api_key missing or malformed x-gw-key header (this route\'s gateway API key header)');
  assert.equal(auth('hdr', { 'x-gw-key': 'nope' }), '401 invalid_api_key Invalid API key');
});

test('anonymous runs as the configured key and must come from source_cidrs', () => {
  assert.equal(auth('tunnel', {}, '10.1.2.3'), 'ok anon anonymous');
  assert.equal(auth('tunnel', { authorization: 'Bearer k-all' }, '10.1.2.3'), 'ok anon anonymous');
  assert.equal(auth('tunnel', {}, '11.1.2.3'), '403 ip_restricted your client IP is not allowed to access this route');
  // Fails closed when the client address is unknown, even for 0.0.0.0/0.
  assert.equal(auth('anywhere', {}, 'unknown'), '403 ip_restricted your client IP is not allowed to access this route');
  // The anonymous principal still needs the grant.
  assert.equal(auth('anywhere', {}, '10.0.0.1'), '403 route_access_forbidden API key is not allowed to use passthrough route "anywhere"');
});

test('source_cidrs also hardens keyed routes, before the credential is looked at', () => {
  assert.equal(auth('walled', { authorization: 'Bearer k-all' }, '192.168.3.4'), 'ok all');
  assert.equal(auth('walled', { authorization: 'Bearer k-all' }, '10.0.0.1'), '403 ip_restricted your client IP is not allowed to access this route');
  assert.equal(auth('walled', {}, '10.0.0.1'), '403 ip_restricted your client IP is not allowed to access this route');
});
