// E2E, spec 3 §2.1 timeout_ms fallbacks: without a route value the deployment's
// upstream.stream_timeout_ms applies, then upstream.timeout_ms; only both at 0 remove the bound.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type Gateway } from '../harness/spawn.ts';
import { testConfig } from '../harness/proxy-fixture.ts';
import { startMockUpstream, type MockUpstream } from '../harness/mock-upstream.ts';
import { rawRequest } from '../harness/echo-upstream.ts';

const KEY = 'sk-pt-timeouts';
const gateways: Gateway[] = [];
let mock: MockUpstream | undefined;

after(async () => {
  await Promise.all(gateways.map((g) => g.stop()));
  await mock?.close();
});

async function gatewayWith(upstream: { timeout_ms: number; stream_timeout_ms: number }): Promise<Gateway> {
  mock ??= await startMockUpstream();
  const gw = await startGateway({
    config: testConfig({ upstream }),
    resources: {
      _format_version: '1',
      provider_keys: [{ display_name: 'up', provider: 'openai', api_key: 'sk-provider' }],
      api_keys: [{ display_name: 'caller', key_env: 'PT_KEY', allowed_models: [], allowed_routes: ['*'] }],
      passthrough_routes: [{ name: 'r', path_prefix: '/r', target_url: mock.url, provider_key: 'up' }],
    },
    env: { PT_KEY: KEY },
  });
  gateways.push(gw);
  return gw;
}

const get = (gw: Gateway) => rawRequest(gw.proxyUrl, { path: '/r/x', headers: { authorization: `Bearer ${KEY}` } });

test('upstream.stream_timeout_ms is the route default when set', async () => {
  const gw = await gatewayWith({ timeout_ms: 10_000, stream_timeout_ms: 400 });
  mock!.script({ json: {}, delayHeadersMs: 1200 });
  const res = await get(gw);
  assert.equal(res.status, 504);
  assert.equal(JSON.parse(res.text).error.message, 'upstream request timed out after 400ms');
});

test('then upstream.timeout_ms', async () => {
  const gw = await gatewayWith({ timeout_ms: 500, stream_timeout_ms: 0 });
  mock!.script({ sse: ['data: {"n":1}\n\n'], delayFirstEventMs: 1300 });
  const res = await get(gw);
  assert.equal(res.status, 504);
  assert.equal(JSON.parse(res.text).error.message, 'upstream stream timed out after 500ms without data');
});

test('only both at 0 remove the bound', async () => {
  const gw = await gatewayWith({ timeout_ms: 0, stream_timeout_ms: 0 });
  mock!.script({ json: { late: true }, delayHeadersMs: 1500 });
  const res = await get(gw);
  assert.equal(res.status, 200);
  assert.deepEqual(JSON.parse(res.text), { late: true });
});
