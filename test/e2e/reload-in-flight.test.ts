// E2E: a SIGHUP reload while streams are in flight, the new file removing the streams' model, API
// key, provider key and rate-limit policy. The streams finish on the snapshot they started on:
// each ends normally, writes one usage row, gives its Redis concurrency slots back exactly once,
// and is reported in the metrics under the key owner it was authenticated as.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import YAML from 'yaml';
import type { Redis } from 'ioredis';
import { startGateway, type Gateway } from '../harness/spawn.ts';
import type { MockUpstream } from '../harness/mock-upstream.ts';
import { heldSlots, useRedisGatewayFixture } from '../harness/redis-fixture.ts';
import { testConfig } from '../harness/proxy-fixture.ts';
import { replyFor, type Turn } from '../harness/provider-wire.ts';
import { logLines, waitForLines } from '../harness/log-lines.ts';

const KEY = 'sk-e2e-reload-in-flight-7d1a';
const TEXT: Turn = { text: 'ok', usage: { input: 11, output: 7 } };

let mock: MockUpstream;
let redis: Redis;
const { prefix, gateways } = useRedisGatewayFixture((fx) => ({ mock, redis } = fx));

const before1 = (mockUrl: string) => ({
  _format_version: '1',
  provider_keys: [{ display_name: 'up', provider: 'openai', api_key: 'sk-up', api_base: `${mockUrl}/v1` }],
  models: [{ display_name: 'm1', provider: 'openai', model_name: 'm1-up', provider_key: 'up', rate_limit: { concurrency: 2 } }],
  api_keys: [{ display_name: 'caller', key_env: 'E2E_RELOAD_IN_FLIGHT_KEY', allowed_models: ['*'], team_id: 'team-a', user_id: 'alice', rate_limit: { concurrency: 2 } }],
  rate_limit_policies: [{ name: 'pol', limits: { concurrency: 2 }, conditions: { dimension: 'model_name', operator: '==', value: 'm1' } }],
});
const after1 = (mockUrl: string) => ({
  _format_version: '1',
  provider_keys: [{ display_name: 'up2', provider: 'openai', api_key: 'sk-up2', api_base: `${mockUrl}/v1` }],
  models: [{ display_name: 'm2', provider: 'openai', model_name: 'm2-up', provider_key: 'up2' }],
  api_keys: [],
});

const held = (): Promise<number> => heldSlots(redis, prefix);

function stream(gw: Gateway) {
  return fetch(`${gw.proxyUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
    body: JSON.stringify({ model: 'm1', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } }),
  }).then(async (res) => ({ status: res.status, id: res.headers.get('x-tollgate-request-id'), body: await res.text() }));
}

test('streams in flight across a reload that removes their model, key, provider key and policy finish on their snapshot', async () => {
  const gw = await startGateway({
    config: testConfig({
      ratelimit: { backend: 'redis', lease_renew_interval_ms: 100, concurrency_ttl_secs: 300, redis: { url: 'redis://127.0.0.1:6379', key_prefix: prefix } },
      observability: { metrics: { prometheus: { addr: '127.0.0.1:0' }, labels: { team_name: true, user_name: true } }, usage_event: { file: 'usage.ndjson' } },
    }),
    resources: before1(mock.url),
    env: { E2E_RELOAD_IN_FLIGHT_KEY: KEY },
  });
  gateways.push(gw);
  // Held open until the reload is in: the first frames now, the rest once the new file serves.
  let reloaded = false;
  mock.setFallback(async (req) => {
    for (let i = 0; i < 300 && !reloaded; i++) await new Promise((r) => setTimeout(r, 20));
    return replyFor(TEXT)(req);
  });
  const streams = [stream(gw), stream(gw)];
  await mock.waitForRequests(2);
  // Key, model and policy each hold a slot per stream.
  assert.equal(await held(), 6);
  fs.writeFileSync(gw.resourcesPath!, YAML.stringify(after1(mock.url)));
  gw.signal('SIGHUP');
  for (let i = 0; i < 250 && !gw.stderrText().includes('resources reloaded'); i++) await new Promise((r) => setTimeout(r, 20));
  assert.match(gw.stderrText(), /resources reloaded/);
  reloaded = true;
  const results = await Promise.all(streams);
  for (const r of results) {
    assert.equal(r.status, 200);
    assert.match(r.body, /\[DONE\]/);
  }
  let n = await held();
  for (let i = 0; i < 50 && n > 0; i++) {
    await new Promise((r) => setTimeout(r, 20));
    n = await held();
  }
  assert.equal(n, 0, 'every slot given back');
  // One usage row per stream, with its tokens, in the log and in the file.
  await waitForLines(gw, 'usage', () => true, 2);
  for (const r of results) {
    const rows = logLines(gw, 'usage').filter((l) => l.request_id === r.id);
    assert.equal(rows.length, 1);
    assert.equal(rows[0].status, 200);
    assert.equal(rows[0].total_tokens, 18);
  }
  // The file is written in batches (every 250 ms).
  const file = `${gw.dir}/usage.ndjson`;
  for (let i = 0; i < 100 && fs.readFileSync(file, 'utf8').split('\n').length < 3; i++) await new Promise((r) => setTimeout(r, 20));
  const fileRows = fs.readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(fileRows.map((r) => r.request_id).sort(), results.map((r) => r.id).sort());
  // Reported under the owner the key had when the request was authenticated.
  const metrics = await (await fetch(`${gw.metricsUrl}/metrics`)).text();
  const line = metrics.split('\n').find((l) => l.startsWith('tollgate_proxy_requests_total{') && l.includes('model="m1"'));
  assert.ok(line, metrics);
  assert.match(line, /team_name="team-a"/);
  assert.match(line, /user_name="alice"/);
  assert.equal(Number(line.split(' ').at(-1)), 2);
  // The removed key is refused now.
  const refused = await fetch(`${gw.proxyUrl}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` }, body: '{"model":"m2","messages":[]}' });
  assert.equal(refused.status, 401);
  await refused.text();
});
