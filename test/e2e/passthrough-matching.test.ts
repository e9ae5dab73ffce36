// E2E, spec 3 §1 rules 1, 5, 6 and §2.1 (path_prefix, hosts, enabled): which pass-through route
// claims a request, against the spawned gateway and a recording upstream.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Gateway } from '../harness/spawn.ts';
import { useProxyFixture } from '../harness/proxy-fixture.ts';
import type { MockUpstream } from '../harness/mock-upstream.ts';
import { echoReply, rawRequest } from '../harness/echo-upstream.ts';

const KEY = 'sk-e2e-pt-match-all';
let mock: MockUpstream;
let gw: Gateway;

useProxyFixture({
  resources: (m) => ({
    _format_version: '1',
    provider_keys: [{ display_name: 'up', provider: 'openai', api_key: 'sk-provider-secret' }],
    api_keys: [{ display_name: 'all', key_env: 'PT_KEY', allowed_models: ['*'], allowed_routes: ['*'] }],
    passthrough_routes: [
      { name: 'openai-files', path_prefix: '/passthrough/openai', target_url: `${m}/v1`, provider_key: 'up' },
      { name: 'openai-batches', path_prefix: '/passthrough/openai/batches', target_url: `${m}/batches-upstream`, provider_key: 'up' },
      { name: 'off', path_prefix: '/passthrough/off', target_url: `${m}/off`, provider_key: 'up', enabled: false },
      { name: 'off-host', hosts: ['off.example.com'], target_url: `${m}/off`, provider_key: 'up', enabled: false },
      { name: 'host-chat', hosts: ['ai-upstream.example.com'], target_url: m, provider_key: 'up' },
      { name: 'host-mcp', hosts: ['agent.example.com'], path_prefix: '/mcp', target_url: `${m}/agent`, provider_key: 'up' },
      { name: 'wild', hosts: ['*.copilot.example.com'], target_url: `${m}/wild`, provider_key: 'up' },
      { name: 'shared-path', path_prefix: '/passthrough/shared', target_url: `${m}/path-only`, provider_key: 'up' },
      { name: 'shared-host', hosts: ['shared.example.com'], path_prefix: '/passthrough/shared', target_url: `${m}/host-route`, provider_key: 'up' },
    ],
  }),
  env: { PT_KEY: KEY },
  ready: (fx) => ({ mock, gw } = fx),
});

const auth = { authorization: `Bearer ${KEY}` };

function get(path: string, headers: Record<string, string> = {}, method = 'GET') {
  return rawRequest(gw.proxyUrl, { method, path, headers: { ...auth, ...headers } });
}

/** The upstream path the single recorded request arrived at. */
function upstreamUrl(): string {
  assert.equal(mock.requests.length, 1, 'exactly one upstream request');
  return mock.requests[0].url;
}

test('rule 1: an unclaimed /passthrough/* path answers 404 with an empty body and reaches nothing', async () => {
  mock.setFallback(echoReply);
  for (const p of ['/passthrough/unknown/v1/files', '/passthrough', '/passthrough/openaix/files', '/passthrough/off/x']) {
    const res = await get(p);
    assert.equal(res.status, 404, p);
    assert.equal(res.body.length, 0, p);
    assert.equal(res.headers['content-length'], '0');
  }
  assert.equal(mock.requests.length, 0);
});

test('path stage: the prefix matches on a segment boundary and is stripped', async () => {
  mock.setFallback(echoReply);
  const res = await get('/passthrough/openai/v1/files?limit=3');
  assert.equal(res.status, 200, res.text);
  assert.equal(upstreamUrl(), '/v1/files?limit=3');
  assert.equal(JSON.parse(res.text).url, '/v1/files?limit=3');
});

test('rule 6: the longer matching prefix wins', async () => {
  mock.setFallback(echoReply);
  assert.equal((await get('/passthrough/openai/batches/batch_1')).status, 200);
  assert.equal(upstreamUrl(), '/batches-upstream/batch_1');
  mock.reset();
  mock.setFallback(echoReply);
  assert.equal((await get('/passthrough/openai/batchesx')).status, 200);
  assert.equal(upstreamUrl(), '/v1/batchesx');
});

test('a disabled route matches nothing (path or host)', async () => {
  mock.setFallback(echoReply);
  assert.equal((await get('/passthrough/off/x')).status, 404);
  assert.equal((await get('/x', { host: 'off.example.com' })).status, 404);
  assert.equal(mock.requests.length, 0);
});

test('rule 5: a host route is dispatched before the typed routes, even on /v1/chat/completions', async () => {
  mock.setFallback(echoReply);
  const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
  const res = await rawRequest(gw.proxyUrl, {
    method: 'POST', path: '/v1/chat/completions', body,
    headers: { ...auth, host: 'ai-upstream.example.com', 'content-type': 'application/json' },
  });
  assert.equal(res.status, 200, res.text);
  assert.equal(upstreamUrl(), '/v1/chat/completions');
  assert.equal(mock.requests[0].body, body);
  assert.equal(mock.requests[0].headers.authorization, 'Bearer sk-provider-secret');
});

test('rule 5: without a matching host the typed route answers', async () => {
  mock.setFallback(echoReply);
  const res = await rawRequest(gw.proxyUrl, {
    method: 'POST', path: '/v1/chat/completions', body: JSON.stringify({ model: 'nope', messages: [{ role: 'user', content: 'hi' }] }),
    headers: { ...auth, 'content-type': 'application/json' },
  });
  assert.notEqual(res.status, 200);
  assert.equal(JSON.parse(res.text).error.code, 'model_not_found');
  assert.equal(mock.requests.length, 0);
});

test('hosts match case-insensitively with the port ignored', async () => {
  mock.setFallback(echoReply);
  assert.equal((await get('/v1/models', { host: 'AI-Upstream.Example.COM:8443' })).status, 200);
  assert.equal(upstreamUrl(), '/v1/models');
});

test('the asterisk form (OPTIONS *) is answered by the gateway, not forwarded to a host route as a path', async () => {
  mock.setFallback(echoReply);
  for (const host of ['ai-upstream.example.com', 'a.copilot.example.com', `127.0.0.1:${new URL(gw.proxyUrl).port}`]) {
    const res = await get('*', { host }, 'OPTIONS');
    assert.equal(res.status, 200, `${host}: ${res.text}`);
    assert.equal(res.headers.allow, 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS');
    assert.equal(res.headers['content-length'], '0');
    // Any other method has no resource to act on.
    assert.equal((await get('*', { host })).status, 404, host);
    assert.equal((await get('*', { host, 'content-type': 'application/json' }, 'POST')).status, 404, host);
  }
  assert.equal(mock.requests.length, 0, 'nothing reaches the upstream');
});

test('forward-proxy (absolute-form) requests match by the target authority', async () => {
  mock.setFallback(echoReply);
  const res = await get('http://ai-upstream.example.com/v1/models?x=1', { host: 'ignored.example.com' });
  assert.equal(res.status, 200, res.text);
  assert.equal(upstreamUrl(), '/v1/models?x=1');
});

test('a *. wildcard host matches exactly one extra label', async () => {
  mock.setFallback(echoReply);
  assert.equal((await get('/anything', { host: 'proxy.copilot.example.com' })).status, 200);
  assert.equal(upstreamUrl(), '/wild/anything');
  for (const host of ['copilot.example.com', 'a.b.copilot.example.com']) {
    assert.equal((await get('/anything', { host })).status, 404, host);
  }
  assert.equal(mock.requests.length, 1);
});

test('a Host that is not a DNS name or IP literal matches no host route (404, nothing sent)', async () => {
  mock.setFallback(echoReply);
  // As text each has one label before .copilot.example.com; as a URL host it is something else.
  for (const host of ['a%2eb.copilot.example.com', 'evil@proxy.copilot.example.com', 'a b.copilot.example.com', 'proxy.copilot.example.com:x']) {
    const res = await get('/anything', { host });
    assert.equal(res.status, 404, host);
    assert.equal(res.body.length, 0, host);
  }
  const absolute = await get('http://a%2eb.copilot.example.com/anything', { host: 'proxy.copilot.example.com' });
  assert.equal(absolute.status, 404);
  assert.equal(mock.requests.length, 0);
});

test('with hosts and path_prefix both must match', async () => {
  mock.setFallback(echoReply);
  assert.equal((await get('/mcp/readonly', { host: 'agent.example.com' })).status, 200);
  assert.equal(upstreamUrl(), '/agent/readonly');
  assert.equal((await get('/other', { host: 'agent.example.com' })).status, 404);
  assert.equal((await get('/mcpx', { host: 'agent.example.com' })).status, 404);
  assert.equal((await get('/mcp/readonly', { host: 'elsewhere.example.com' })).status, 404);
  assert.equal(mock.requests.length, 1);
});

test('rule 6: a host match beats a path-only match of the same prefix', async () => {
  mock.setFallback(echoReply);
  assert.equal((await get('/passthrough/shared/x', { host: 'shared.example.com' })).status, 200);
  assert.equal(upstreamUrl(), '/host-route/x');
  mock.reset();
  mock.setFallback(echoReply);
  assert.equal((await get('/passthrough/shared/x')).status, 200);
  assert.equal(upstreamUrl(), '/path-only/x');
});

test('typed routes keep their paths: a path-only route never sees /v1 or the probes', async () => {
  mock.setFallback(echoReply);
  assert.equal((await get('/livez')).status, 200);
  const models = await get('/v1/models');
  assert.equal(models.status, 200);
  assert.equal(JSON.parse(models.text).object, 'list');
  assert.equal(mock.requests.length, 0);
});
