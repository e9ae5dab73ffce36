// E2E, spec 3 §5 (gateway authentication modes, source_cidrs, route grants) and §7 (401, 403 in
// the gateway error envelope). Client addresses are simulated through proxy.real_ip: the test
// client is a trusted proxy and names the client in X-Forwarded-For.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import type { Gateway } from '../harness/spawn.ts';
import { useProxyFixture } from '../harness/proxy-fixture.ts';
import type { MockUpstream } from '../harness/mock-upstream.ts';
import { echoReply, rawRequest, usageOf, type RawResponse } from '../harness/echo-upstream.ts';
import { waitForLines } from '../harness/log-lines.ts';
import { deriveId } from '../../src/resources/ids.ts';

const KEYS = { all: 'sk-pt-auth-all', files: 'sk-pt-auth-files', none: 'sk-pt-auth-none', off: 'sk-pt-auth-off', old: 'sk-pt-auth-old', glob: 'sk-pt-auth-glob' };
let mock: MockUpstream;
let gw: Gateway;

useProxyFixture({
  config: {
    proxy: { real_ip: { trusted_proxies: ['127.0.0.1', '::1'], header: 'x-forwarded-for' }, request_timeout_ms: 1200 },
    // The byok route's key header is listed too: it must still never be captured.
    observability: { usage_event: { request_headers: ['x-gw-key', 'x-team'] } },
  },
  resources: (m) => ({
    _format_version: '1',
    provider_keys: [{ display_name: 'up', provider: 'openai', api_key: 'sk-provider-secret' }],
    api_keys: [
      { display_name: 'all', key_env: 'K_ALL', allowed_models: [], allowed_routes: ['*'] },
      { display_name: 'files', key_env: 'K_FILES', allowed_models: [], allowed_routes: ['files'] },
      { display_name: 'glob', key_env: 'K_GLOB', allowed_models: [], allowed_routes: ['team-*'] },
      { display_name: 'none', key_env: 'K_NONE', allowed_models: ['*'] },
      { display_name: 'off', key_env: 'K_OFF', allowed_models: [], allowed_routes: ['*'], disabled: true },
      { display_name: 'old', key_env: 'K_OLD', allowed_models: [], allowed_routes: ['*'], expires_at: '2001-01-01T00:00:00Z' },
      { display_name: 'tunnel-principal', key_hash: 'a'.repeat(64), allowed_models: [], allowed_routes: ['tunnel', 'far-tunnel'] },
    ],
    passthrough_routes: [
      { name: 'files', path_prefix: '/passthrough/files', target_url: m, provider_key: 'up' },
      { name: 'team-batches', path_prefix: '/passthrough/team-batches', target_url: m, provider_key: 'up' },
      { name: 'other', path_prefix: '/passthrough/other', target_url: m, provider_key: 'up' },
      {
        name: 'byok', path_prefix: '/passthrough/byok', target_url: m,
        auth_mode: 'header_key', auth_header_name: 'x-gw-key', credential_mode: 'forward_client',
      },
      { name: 'tunnel', path_prefix: '/tunnel', target_url: m, auth_mode: 'anonymous', anonymous_key: 'tunnel-principal', source_cidrs: ['10.0.0.0/8', '127.0.0.1'], credential_mode: 'forward_client' },
      { name: 'far-tunnel', path_prefix: '/far-tunnel', target_url: m, auth_mode: 'anonymous', anonymous_key: 'tunnel-principal', source_cidrs: ['192.0.2.0/24'], credential_mode: 'forward_client' },
      { name: 'walled', path_prefix: '/passthrough/walled', target_url: m, provider_key: 'up', source_cidrs: ['10.0.0.0/8'] },
    ],
  }),
  env: { K_ALL: KEYS.all, K_FILES: KEYS.files, K_NONE: KEYS.none, K_OFF: KEYS.off, K_OLD: KEYS.old, K_GLOB: KEYS.glob },
  ready: (fx) => ({ mock, gw } = fx),
});

function call(path: string, headers: Record<string, string> = {}): Promise<RawResponse> {
  mock.setFallback(echoReply);
  return rawRequest(gw.proxyUrl, { method: 'POST', path, headers: { 'content-type': 'application/json', ...headers }, body: '{}' });
}

async function expectError(res: RawResponse, status: number, code: string, message: string, type: string): Promise<void> {
  assert.equal(res.status, status, res.text);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  assert.ok(res.headers['x-tollgate-request-id']);
  assert.deepEqual(JSON.parse(res.text), { error: { message, type, param: null, code } });
  assert.equal(mock.requests.length, 0, 'the upstream must not be contacted');
  const usage = await usageOf(gw, res.headers['x-tollgate-request-id'] as string);
  assert.equal(usage.status, status);
  assert.equal(usage.error_class, code);
  assert.equal(usage.operation, 'passthrough');
}

const missing = (res: RawResponse) => expectError(res, 401, 'missing_api_key', 'Missing API key in request', 'authentication_error');
const forbidden = (route: string) => (res: RawResponse) =>
  expectError(res, 403, 'route_access_forbidden', `API key is not allowed to use passthrough route "${route}"`, 'permission_error');
const ipRestricted = (res: RawResponse) => expectError(res, 403, 'ip_restricted', 'your client IP is not allowed to access this route', 'permission_error');

test('gateway_key: Authorization: Bearer and x-api-key are accepted', async () => {
  assert.equal((await call('/passthrough/files/x', { authorization: `Bearer ${KEYS.all}` })).status, 200);
  assert.equal((await call('/passthrough/files/x', { 'x-api-key': KEYS.all })).status, 200);
  assert.equal(mock.requests.length, 2);
});

test('gateway_key: a missing credential is 401 (a bare Authorization value is not a gateway credential)', async () => {
  await missing(await call('/passthrough/files/x'));
  await missing(await call('/passthrough/files/x', { authorization: KEYS.all }));
});

test('gateway_key: unknown, disabled and expired keys are 401', async () => {
  await expectError(await call('/passthrough/files/x', { authorization: 'Bearer sk-nope' }), 401, 'invalid_api_key', 'Invalid API key', 'authentication_error');
  await expectError(await call('/passthrough/files/x', { authorization: `Bearer ${KEYS.off}` }), 401, 'api_key_disabled', 'API key has been disabled', 'authentication_error');
  await expectError(await call('/passthrough/files/x', { authorization: `Bearer ${KEYS.old}` }), 401, 'api_key_expired', 'API key has expired', 'authentication_error');
});

test('§5 grants: the route name must be in allowed_routes (exact or glob); * grants all; otherwise 403', async () => {
  assert.equal((await call('/passthrough/files/x', { authorization: `Bearer ${KEYS.files}` })).status, 200);
  assert.equal((await call('/passthrough/team-batches/x', { authorization: `Bearer ${KEYS.glob}` })).status, 200);
  assert.equal((await call('/passthrough/other/x', { authorization: `Bearer ${KEYS.all}` })).status, 200);
  mock.reset();
  await forbidden('other')(await call('/passthrough/other/x', { authorization: `Bearer ${KEYS.files}` }));
  await forbidden('files')(await call('/passthrough/files/x', { authorization: `Bearer ${KEYS.glob}` }));
  // A key without allowed_routes may use models but no route.
  await forbidden('files')(await call('/passthrough/files/x', { authorization: `Bearer ${KEYS.none}` }));
});

test('header_key: the credential comes from auth_header_name; Authorization is left for the upstream', async () => {
  const res = await call('/passthrough/byok/v1/models', { 'x-gw-key': KEYS.all, authorization: 'Bearer employee-own-token', 'x-team': 'blue' });
  assert.equal(res.status, 200, res.text);
  assert.equal(mock.requests[0].headers.authorization, 'Bearer employee-own-token');
  assert.equal(mock.requests[0].headers['x-gw-key'], undefined);
  const usage = await usageOf(gw, res.headers['x-tollgate-request-id'] as string);
  assert.equal(usage.api_key_id !== null, true);
  assert.deepEqual(usage.request_headers, { 'x-team': 'blue' }, 'the gateway key header is never captured');
  assert.ok(!gw.stderrText().includes(KEYS.all), 'the gateway key never reaches the log');
});

test('header_key: a gateway key in Authorization does not authenticate', async () => {
  await expectError(await call('/passthrough/byok/x', { authorization: `Bearer ${KEYS.all}` }), 401, 'missing_api_key',
    'missing or malformed x-gw-key header (this route\'s gateway API key header)', 'authentication_error');
  await expectError(await call('/passthrough/byok/x', { 'x-gw-key': 'sk-wrong' }), 401, 'invalid_api_key', 'Invalid API key', 'authentication_error');
});

test('anonymous: no credential, runs as the configured principal, from source_cidrs only', async () => {
  const res = await call('/tunnel/health', { 'x-forwarded-for': '10.9.8.7' });
  assert.equal(res.status, 200, res.text);
  const usage = await usageOf(gw, res.headers['x-tollgate-request-id'] as string);
  assert.equal(usage.api_key_id, deriveId('api_keys', 'tunnel-principal'));
  mock.reset();
  await ipRestricted(await call('/tunnel/health', { 'x-forwarded-for': '172.16.0.1' }));
  await ipRestricted(await call('/far-tunnel/health', { authorization: `Bearer ${KEYS.all}` }));
});

test('anonymous: the direct peer counts when no trusted proxy speaks for it', async () => {
  // 127.0.0.1 is in the tunnel's list and is the TCP peer here.
  assert.equal((await call('/tunnel/health')).status, 200);
});

test('source_cidrs hardens a keyed route: outside it is 403 even with a valid key', async () => {
  assert.equal((await call('/passthrough/walled/x', { authorization: `Bearer ${KEYS.all}`, 'x-forwarded-for': '10.1.1.1' })).status, 200);
  mock.reset();
  await ipRestricted(await call('/passthrough/walled/x', { authorization: `Bearer ${KEYS.all}`, 'x-forwarded-for': '11.1.1.1' }));
});

test('the access log records the caller and route, never the presented credential', async () => {
  const res = await call('/passthrough/files/x', { authorization: `Bearer ${KEYS.all}` });
  const rid = res.headers['x-tollgate-request-id'] as string;
  const [line] = await waitForLines(gw, 'access', (l) => l.request_id === rid);
  assert.equal(line.path, '/passthrough_route');
  assert.equal(line.provider, 'files');
  assert.equal(line.api_key_name, 'all');
  assert.equal(line.status, 200);
  for (const secret of Object.values(KEYS)) assert.ok(!gw.stderrText().includes(secret), 'a caller key reached the log');
  assert.ok(!gw.stderrText().includes('sk-provider-secret'));
});

test('an inject route names its provider key in the metrics, as in its usage row', async () => {
  const res = await call('/passthrough/files/x', { authorization: `Bearer ${KEYS.all}` });
  assert.equal(res.status, 200, res.text);
  const pk = deriveId('provider_keys', 'up');
  assert.equal((await usageOf(gw, res.headers['x-tollgate-request-id'] as string)).provider_key_id, pk);
  const text = await (await fetch(`${gw.metricsUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('tollgate_proxy_requests_total{') && l.includes('provider="files"'));
  assert.ok(line, 'a proxy_requests_total series for the files route');
  assert.match(line, new RegExp(`provider_key_id="${pk}"`));
});

test('a caller that stalls mid-body on a route gets 408; its usage row and access line say 408 request_timeout', async () => {
  const url = new URL(gw.proxyUrl);
  const status = await new Promise<number>((resolve) => {
    let head = '';
    const socket = net.connect(Number(url.port), url.hostname, () => {
      socket.write(`POST /passthrough/files/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEYS.all}\r\nX-Tollgate-Request-Id: e2e-pt-stalled\r\nContent-Length: 100\r\n\r\n{`);
    });
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (head += d));
    socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0)));
  });
  assert.equal(status, 408);
  const usage = await usageOf(gw, 'e2e-pt-stalled');
  assert.equal(usage.status, 408);
  assert.equal(usage.error_class, 'request_timeout');
  const [access] = await waitForLines(gw, 'access', (l) => l.request_id === 'e2e-pt-stalled');
  assert.equal(access.status, 408);
});
