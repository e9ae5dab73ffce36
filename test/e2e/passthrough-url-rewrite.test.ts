// E2E, spec 3 §1 rule 4: `proxy.url_rewrites` runs before route matching, and the pass-through
// host stage, the typed routes and the pass-through path stage all match the rewritten path.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Gateway } from '../harness/spawn.ts';
import { useProxyFixture } from '../harness/proxy-fixture.ts';
import type { MockUpstream } from '../harness/mock-upstream.ts';
import { echoReply, rawRequest } from '../harness/echo-upstream.ts';
import { waitForLines } from '../harness/log-lines.ts';

const KEY = 'sk-e2e-pt-rewrite-7c1';
let mock: MockUpstream;
let gw: Gateway;

useProxyFixture({
  config: {
    proxy: {
      url_rewrites: [
        // Listed before the legacy rule, which would otherwise never see these paths.
        { name: 'retired', match: '^/passthrough/files/retired(/.*)?$', rewrite: '/passthrough/retired$1' },
        { name: 'legacy-files', match: '^/legacy/files(/.*)?$', rewrite: '/passthrough/files$1' },
        { name: 'agent', match: '^/agent-api/', rewrite: '/mcp/' },
        { name: 'models', match: '^/custom/models$', rewrite: '/v1/models' },
      ],
    },
  },
  resources: (m) => ({
    _format_version: '1',
    provider_keys: [{ display_name: 'up', provider: 'openai', api_key: 'sk-provider-secret', api_base: `${m}/v1` }],
    models: [{ display_name: 'fast', provider: 'openai', model_name: 'gpt-4o-mini', provider_key: 'up' }],
    api_keys: [{ display_name: 'all', key_env: 'PT_KEY', allowed_models: ['*'], allowed_routes: ['*'] }],
    passthrough_routes: [
      { name: 'files', path_prefix: '/passthrough/files', target_url: `${m}/v1`, provider_key: 'up' },
      { name: 'host-agent', hosts: ['agent.example.com'], path_prefix: '/mcp', target_url: `${m}/agent`, provider_key: 'up' },
    ],
  }),
  env: { PT_KEY: KEY },
  ready: (fx) => ({ mock, gw } = fx),
});

const auth = { authorization: `Bearer ${KEY}` };

function get(path: string, headers: Record<string, string> = {}) {
  return rawRequest(gw.proxyUrl, { method: 'GET', path, headers: { ...auth, ...headers } });
}

/** The upstream request target of the single recorded request. */
function upstreamUrl(): string {
  assert.equal(mock.requests.length, 1, 'exactly one upstream request');
  return mock.requests[0].url;
}

test('path stage: a rewritten path is claimed by a path-only route, which strips its prefix; the query is kept', async () => {
  mock.setFallback(echoReply);
  const res = await get('/legacy/files/f_1/content?limit=3&after=f_0');
  assert.equal(res.status, 200, res.text);
  assert.equal(upstreamUrl(), '/v1/f_1/content?limit=3&after=f_0');
  assert.equal(mock.requests[0].headers.authorization, 'Bearer sk-provider-secret');
  // The prefix alone (no rest) is claimed too.
  mock.reset();
  mock.setFallback(echoReply);
  assert.equal((await get('/legacy/files')).status, 200);
  assert.equal(upstreamUrl(), '/v1');
});

test('host stage: a route with hosts and path_prefix matches only the rewritten path', async () => {
  mock.setFallback(echoReply);
  const res = await get('/agent-api/tools/list?cursor=2', { host: 'agent.example.com' });
  assert.equal(res.status, 200, res.text);
  assert.equal(upstreamUrl(), '/agent/tools/list?cursor=2');
  // The same rewrite on another host: the host route does not match, and nothing else claims /mcp/.
  mock.reset();
  mock.setFallback(echoReply);
  const other = await get('/agent-api/tools/list', { host: 'elsewhere.example.com' });
  assert.equal(other.status, 404);
  assert.equal(mock.requests.length, 0);
});

test('typed routes: a custom path rewritten onto /v1/models is served by the models endpoint', async () => {
  const res = await get('/custom/models', { 'x-tollgate-request-id': 'rewrite-models-1' });
  assert.equal(res.status, 200, res.text);
  const body = JSON.parse(res.text);
  assert.equal(body.object, 'list');
  assert.deepEqual(body.data.map((m: { id: string }) => m.id), ['fast']);
  assert.equal(mock.requests.length, 0, 'the typed route answered, not an upstream');
  // The access log names the route template it reached, not the caller's path.
  const [line] = await waitForLines(gw, 'access', (l) => l.request_id === 'rewrite-models-1');
  assert.equal(line?.path, '/v1/models');
});

test('rule 1 after a rewrite: a rewritten /passthrough/* path no route claims is the empty 404', async () => {
  mock.setFallback(echoReply);
  // Without the rewrite, the files route would claim this path.
  for (const p of ['/passthrough/files/retired/x?y=1', '/passthrough/files/retired']) {
    const res = await get(p);
    assert.equal(res.status, 404, p);
    assert.equal(res.body.length, 0, p);
    assert.equal(res.headers['content-length'], '0', p);
  }
  assert.equal(mock.requests.length, 0);
  // A path no rule matches is routed as sent.
  assert.equal((await get('/passthrough/files/current')).status, 200);
  assert.equal(upstreamUrl(), '/v1/current');
});
