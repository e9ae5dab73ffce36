// E2E, spec 3 §5 (upstream credential modes and the header relay rules), §2.1 identity_header,
// and the gateway request id / W3C trace context handling, as the upstream sees them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Gateway } from '../harness/spawn.ts';
import { useProxyFixture } from '../harness/proxy-fixture.ts';
import type { MockUpstream } from '../harness/mock-upstream.ts';
import { echoReply, rawRequest, usageOf, type RawResponse } from '../harness/echo-upstream.ts';

const KEY = 'sk-pt-headers-gateway-key';
const OPENAI_SECRET = 'sk-openai-provider-secret';
const ANTHROPIC_SECRET = 'sk-ant-provider-secret';
const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
let mock: MockUpstream;
let gw: Gateway;

useProxyFixture({
  resources: (m) => ({
    _format_version: '1',
    provider_keys: [
      { display_name: 'openai', provider: 'openai', api_key: OPENAI_SECRET },
      { display_name: 'anthropic', provider: 'anthropic', api_key: ANTHROPIC_SECRET },
      { display_name: 'org', provider: 'openai', api_key: OPENAI_SECRET, strip_headers: ['x-org-secret', 'x-org-tenant'] },
    ],
    api_keys: [{ display_name: 'all', key_env: 'PT_KEY', allowed_models: [], allowed_routes: ['*'] }],
    passthrough_routes: [
      { name: 'inject', path_prefix: '/inject', target_url: m, provider_key: 'openai' },
      { name: 'inject-ant', path_prefix: '/ant', target_url: m, provider_key: 'anthropic' },
      { name: 'inject-org', path_prefix: '/org', target_url: m, provider_key: 'org', forward_client_headers: ['x-org-*'] },
      { name: 'inject-own-auth', path_prefix: '/own-auth', target_url: m, provider_key: 'openai', forward_client_headers: ['authorization'] },
      { name: 'inject-own-xk', path_prefix: '/own-xk', target_url: m, provider_key: 'openai', forward_client_headers: ['x-api-key'] },
      {
        name: 'inject-named', path_prefix: '/named', target_url: m, provider_key: 'openai',
        forward_client_headers: ['cookie', 'traceparent', 'proxy-authorization', 'x-api-*', 'trace*', 'auth*'],
      },
      { name: 'fwd-gw', path_prefix: '/fwd-gw', target_url: m, credential_mode: 'forward_client' },
      {
        name: 'fwd-hdr', path_prefix: '/fwd-hdr', target_url: m, credential_mode: 'forward_client',
        auth_mode: 'header_key', auth_header_name: 'x-tollgate-api-key', identity_header: 'x-tollgate-user',
      },
      {
        name: 'fwd-id', path_prefix: '/fwd-id', target_url: m, credential_mode: 'forward_client',
        auth_mode: 'header_key', auth_header_name: 'x-gw-key', identity_header: 'x-employee', forward_client_headers: ['x-employee', 'x-gw-*'],
      },
      { name: 'fwd-anon', path_prefix: '/fwd-anon', target_url: m, credential_mode: 'forward_client', auth_mode: 'anonymous', anonymous_key: 'all', source_cidrs: ['127.0.0.0/8', '::1'] },
    ],
  }),
  env: { PT_KEY: KEY },
  ready: (fx) => ({ mock, gw } = fx),
});

async function seen(path: string, headers: Record<string, string | string[]>): Promise<{ res: RawResponse; up: Record<string, any> }> {
  mock.reset();
  mock.setFallback(echoReply);
  const res = await rawRequest(gw.proxyUrl, { path, headers });
  assert.equal(res.status, 200, res.text);
  assert.equal(mock.requests.length, 1);
  return { res, up: mock.requests[0].headers };
}

test('inject: inbound credentials, cookies and trace headers go; the provider key goes as Bearer', async () => {
  const { up } = await seen('/inject/v1/files', {
    authorization: `Bearer ${KEY}`, cookie: 's=1', 'x-trace': 't', traceparent: TRACEPARENT, tracestate: 'vendor=1',
    'proxy-authorization': 'Basic cHJveHk6cHc=', 'user-agent': 'agent/1.0',
  });
  assert.equal(up.authorization, `Bearer ${OPENAI_SECRET}`);
  assert.equal(up['x-trace'], 't');
  assert.equal(up['user-agent'], 'agent/1.0');
  for (const h of ['cookie', 'traceparent', 'tracestate', 'proxy-authorization', 'x-api-key']) assert.equal(up[h], undefined, h);
  assert.ok(!JSON.stringify(up).includes(KEY), 'the gateway key must not reach the upstream');
});

test('inject: a gateway key sent as x-api-key is stripped too', async () => {
  const { up } = await seen('/inject/x', { 'x-api-key': KEY });
  assert.equal(up['x-api-key'], undefined);
  assert.equal(up.authorization, `Bearer ${OPENAI_SECRET}`);
});

test('inject, messages family: x-api-key plus anthropic-version, no Authorization', async () => {
  const { up } = await seen('/ant/v1/messages', { authorization: `Bearer ${KEY}`, 'anthropic-beta': 'files-api-2025-04-14' });
  assert.equal(up['x-api-key'], ANTHROPIC_SECRET);
  assert.equal(up['anthropic-version'], '2023-06-01');
  assert.equal(up['anthropic-beta'], 'files-api-2025-04-14');
  assert.equal(up.authorization, undefined);
});

test('inject: the provider key strip_headers apply, and a glob entry relays such a header', async () => {
  const { up } = await seen('/org/x', { authorization: `Bearer ${KEY}`, 'x-org-secret': 's', 'x-org-tenant': 't', cookie: 'c=1' });
  assert.equal(up['x-org-secret'], 's');
  assert.equal(up['x-org-tenant'], 't');
  // cookie is not in this key's strip_headers, so it is relayed.
  assert.equal(up.cookie, 'c=1');
  const plain = await seen('/inject/x', { authorization: `Bearer ${KEY}`, 'x-org-secret': 's' });
  assert.equal(plain.up['x-org-secret'], 's');
});

test('naming authorization relays the caller credential in place of the injected one', async () => {
  const { up } = await seen('/own-auth/x', { 'x-api-key': KEY, authorization: 'Bearer caller-own-upstream-token' });
  assert.equal(up.authorization, 'Bearer caller-own-upstream-token');
  assert.equal(up['x-api-key'], undefined);
});

test('naming authorization never relays the gateway key itself, when the caller authenticated with it there', async () => {
  const { up } = await seen('/own-auth/x', { authorization: `Bearer ${KEY}` });
  assert.equal(up.authorization, `Bearer ${OPENAI_SECRET}`, 'the injected credential, not the gateway key');
});

test('the gateway key sent in both Authorization and x-api-key is relayed in neither, though the route names one', async () => {
  const { up } = await seen('/own-xk/x', { authorization: `Bearer ${KEY}`, 'x-api-key': KEY });
  assert.equal(up['x-api-key'], undefined);
  assert.ok(!JSON.stringify(up).includes(KEY), 'the gateway key must not reach the upstream');
  // The caller's own x-api-key, beside the gateway key in Authorization, is relayed as named.
  const own = await seen('/own-xk/x', { authorization: `Bearer ${KEY}`, 'x-api-key': 'caller-own-key' });
  assert.equal(own.up['x-api-key'], 'caller-own-key');
});

test('credential and trace headers need exact names: globs do not relay them', async () => {
  const { up } = await seen('/named/x', {
    authorization: `Bearer ${KEY}`, cookie: 's=1', traceparent: TRACEPARENT, tracestate: 'v=1', 'proxy-authorization': 'Basic x', 'x-api-key': 'vendor-key',
  });
  assert.equal(up.cookie, 's=1');
  assert.equal(up.traceparent, TRACEPARENT);
  assert.equal(up['proxy-authorization'], 'Basic x');
  assert.equal(up.tracestate, undefined, 'trace* must not relay tracestate');
  assert.equal(up['x-api-key'], undefined, 'x-api-* must not relay x-api-key');
  assert.equal(up.authorization, `Bearer ${OPENAI_SECRET}`, 'auth* must not relay authorization');
});

test('forward_client with gateway_key: Authorization and x-api-key are removed, nothing injected', async () => {
  const { up } = await seen('/fwd-gw/x', { authorization: `Bearer ${KEY}`, 'x-api-key': 'maybe-gateway', cookie: 'c=1' });
  assert.equal(up.authorization, undefined);
  assert.equal(up['x-api-key'], undefined);
  assert.equal(up.cookie, 'c=1');
});

test('forward_client with header_key: the caller credential is forwarded; x-tollgate-* and the identity header are not', async () => {
  const { res, up } = await seen('/fwd-hdr/v1/chat/completions', {
    authorization: 'Bearer employee-token', 'x-tollgate-api-key': KEY, 'x-tollgate-user': 'employee-42', cookie: 'sso=1',
  });
  assert.equal(up.authorization, 'Bearer employee-token');
  assert.equal(up.cookie, 'sso=1');
  assert.equal(up['x-tollgate-api-key'], undefined);
  assert.equal(up['x-tollgate-user'], undefined);
  const usage = await usageOf(gw, res.headers['x-tollgate-request-id'] as string);
  assert.equal(usage.client_identity, 'employee-42');
});

test('identity_header and auth_header_name are relayed only when named in full', async () => {
  const { res, up } = await seen('/fwd-id/x', { 'x-gw-key': KEY, 'x-employee': 'e-7' });
  assert.equal(up['x-employee'], 'e-7', 'named in full: relayed');
  assert.equal(up['x-gw-key'], undefined, 'a glob does not relay auth_header_name');
  const usage = await usageOf(gw, res.headers['x-tollgate-request-id'] as string);
  assert.equal(usage.client_identity, 'e-7');
});

test('client_identity is bounded to 256 characters', async () => {
  const { res } = await seen('/fwd-hdr/x', { 'x-tollgate-api-key': KEY, 'x-tollgate-user': 'u'.repeat(600) });
  const usage = await usageOf(gw, res.headers['x-tollgate-request-id'] as string);
  assert.equal(usage.client_identity, 'u'.repeat(256));
});

test('forward_client with anonymous: the caller headers go as sent', async () => {
  const { up } = await seen('/fwd-anon/x', { authorization: 'Bearer own', 'x-api-key': 'own-key' });
  assert.equal(up.authorization, 'Bearer own');
  assert.equal(up['x-api-key'], 'own-key');
});

test('always stripped: host, hop-by-hop and x-tollgate-*; the gateway request id goes upstream', async () => {
  const { res, up } = await seen('/inject/x', {
    authorization: `Bearer ${KEY}`, connection: 'keep-alive, x-hop', 'x-hop': 'h', 'keep-alive': 'timeout=5', te: 'trailers',
    'x-tollgate-request-id': 'caller-chosen', 'x-tollgate-whatever': 'w', host: '127.0.0.1',
  });
  const rid = res.headers['x-tollgate-request-id'];
  for (const h of ['x-hop', 'keep-alive', 'te', 'x-tollgate-whatever']) assert.equal(up[h], undefined, h);
  assert.equal(up['x-tollgate-request-id'], rid);
  assert.notEqual(up.host, '127.0.0.1');
});

test('repeated caller headers keep every value', async () => {
  const { up } = await seen('/inject/x', { authorization: `Bearer ${KEY}`, 'x-multi': ['a', 'b'] });
  assert.equal(up['x-multi'], 'a, b');
});

test('a valid traceparent is consumed, not forwarded; the request id still goes upstream', async () => {
  const { res, up } = await seen('/fwd-gw/x', { authorization: `Bearer ${KEY}`, traceparent: TRACEPARENT, tracestate: 'a=b' });
  assert.equal(up.traceparent, undefined);
  assert.equal(up.tracestate, undefined);
  assert.equal(up['x-tollgate-request-id'], res.headers['x-tollgate-request-id']);
});

test('response headers: upstream headers relayed (repeated ones kept), hop-by-hop and x-tollgate-* dropped', async () => {
  mock.reset();
  mock.script({
    json: { ok: true },
    headers: { 'set-cookie': ['a=1; Path=/', 'b=2; Path=/'] as unknown as string, 'x-upstream': 'u', 'x-tollgate-request-id': 'spoofed', 'keep-alive': 'timeout=1' },
  });
  const res = await rawRequest(gw.proxyUrl, { path: '/inject/x', headers: { authorization: `Bearer ${KEY}` } });
  assert.deepEqual(res.headers['set-cookie'], ['a=1; Path=/', 'b=2; Path=/']);
  assert.equal(res.headers['x-upstream'], 'u');
  assert.notEqual(res.headers['x-tollgate-request-id'], 'spoofed');
  assert.equal(res.rawHeaders.filter((h) => h.toLowerCase() === 'x-tollgate-request-id').length, 1);
});
