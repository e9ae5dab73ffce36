// E2E: an otlp_http exporter removed by a SIGHUP reload while its collector accepts connections
// and never answers. It stops within its close grace: the export in flight is aborted, the
// queued events are counted in tollgate_otlp_fanout_drops_total{reason="exporter_closed"} and
// its connection to the collector is closed (not after the 10 s request timeout per batch).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import YAML from 'yaml';
import { startGateway, type Gateway } from '../harness/spawn.ts';
import { startMockUpstream, type MockUpstream } from '../harness/mock-upstream.ts';
import { startSilentCollector, until, type SilentCollector } from '../harness/otlp-receiver.ts';
import { replyFor } from '../harness/provider-wire.ts';

const CALLER_KEY = 'sk-e2e-otlp-reload-caller';

let mock: MockUpstream;
let collector: SilentCollector;
let gw: Gateway;

const resources = (exporters: object[]) => ({
  _format_version: '1',
  provider_keys: [{ display_name: 'up', provider: 'openai', api_key: 'sk-up', api_base: `${mock.url}/v1` }],
  models: [{ display_name: 'fast', provider: 'openai', model_name: 'gpt-up', provider_key: 'up' }],
  api_keys: [{ display_name: 'caller', key_env: 'E2E_OTLP_RELOAD_KEY', allowed_models: ['fast'] }],
  observability_exporters: exporters,
});

before(async () => {
  mock = await startMockUpstream();
  mock.setFallback(replyFor({ text: 'traced' }));
  collector = await startSilentCollector();
  gw = await startGateway({
    config: { proxy: { addr: '127.0.0.1:0' }, observability: { metrics: { prometheus: { addr: '127.0.0.1:0' } } } },
    resources: resources([{ name: 'silent', kind: 'otlp_http', endpoint: collector.url }]),
    env: { E2E_OTLP_RELOAD_KEY: CALLER_KEY },
  });
});
after(async () => {
  await gw?.stop();
  await Promise.all([mock?.close(), collector?.close()]);
});

async function metric(name: string, labels: Record<string, string>): Promise<number> {
  const text = await (await fetch(`${gw.metricsUrl}/metrics`)).text();
  let n = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) n += Number(line.split(' ').pop());
  }
  return n;
}

test('a removed exporter whose collector never answers stops at once: export aborted, queue dropped as exporter_closed, connection closed', async () => {
  const res = await fetch(`${gw.proxyUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${CALLER_KEY}` },
    body: JSON.stringify({ model: 'fast', messages: [{ role: 'user', content: 'hi' }] }),
  });
  await res.arrayBuffer();
  assert.equal(res.status, 200);
  // The once-a-second flush sends the event; the collector holds the request.
  await until('the export reaches the collector', () => (collector.accepted() > 0 ? true : undefined), 5000);

  const generation = async (): Promise<number> => ((await (await fetch(`${gw.metricsUrl}/status/config`)).json()) as any).generation;
  const before = await generation();
  fs.writeFileSync(gw.resourcesPath!, YAML.stringify(resources([])));
  const removedAt = Date.now();
  gw.signal('SIGHUP');
  while ((await generation()) === before) {
    assert.ok(Date.now() - removedAt < 5000, `no reload within 5 s: ${gw.stderrText()}`);
    await new Promise((r) => setTimeout(r, 25));
  }

  const deadline = removedAt + 5000;
  let dropped = 0;
  while (Date.now() < deadline && (dropped = await metric('tollgate_otlp_fanout_drops_total', { exporter: 'silent', reason: 'exporter_closed' })) === 0) {
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(dropped, 1, `the queued event is dropped as exporter_closed within 5 s: ${await metric('tollgate_otlp_fanout_drops_total', {})} drops in all`);
  await until('the connection to the collector is closed', () => (collector.open() === 0 ? true : undefined), 2000);
  assert.equal(collector.accepted(), 1, 'no export is tried after the abort');
});
