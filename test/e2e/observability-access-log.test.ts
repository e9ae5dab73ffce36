// E2E: the access-log switches (spec 2 §6.2): a config file without an observability block logs at
// info with the access log on; `observability.access_log: false` writes no access line while usage
// events and metrics go on.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type Gateway } from '../harness/spawn.ts';
import { startMockUpstream, type MockUpstream } from '../harness/mock-upstream.ts';
import { replyFor } from '../harness/provider-wire.ts';
import { logLines, waitForLines } from '../harness/log-lines.ts';

const CALLER_KEY = 'sk-e2e-accesslog-caller-1c4f';

const resources = (mockUrl: string) => ({
  _format_version: '1',
  provider_keys: [{ display_name: 'up', provider: 'openai', api_key: 'sk-up-accesslog', api_base: `${mockUrl}/v1` }],
  models: [{ display_name: 'fast', provider: 'openai', model_name: 'gpt-up', provider_key: 'up' }],
  api_keys: [{ display_name: 'caller', key_env: 'E2E_ACCESSLOG_KEY', allowed_models: ['fast'] }],
});

let mock: MockUpstream;
before(async () => {
  mock = await startMockUpstream();
  mock.setFallback(replyFor({ text: 'ok' }));
});
after(() => mock?.close());

async function chat(gw: Gateway, id: string): Promise<void> {
  const res = await fetch(`${gw.proxyUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${CALLER_KEY}`, 'x-tollgate-request-id': id },
    body: JSON.stringify({ model: 'fast', messages: [{ role: 'user', content: 'hi' }] }),
  });
  await res.arrayBuffer();
  assert.equal(res.status, 200);
}

describe('a config without an observability block', () => {
  let gw: Gateway;
  before(async () => {
    gw = await startGateway({
      config: { proxy: { addr: '127.0.0.1:0' } },
      resources: resources(mock.url),
      // The metrics address comes from the environment so the file keeps no observability block.
      env: { E2E_ACCESSLOG_KEY: CALLER_KEY, TOLLGATE_OBSERVABILITY__METRICS__PROMETHEUS__ADDR: '127.0.0.1:0' },
    });
  });
  after(() => gw?.stop());

  test('logs at info: lifecycle lines and one access line per request', async () => {
    await chat(gw, 'e2e-accesslog-default');
    const [line] = await waitForLines(gw, 'access', (l) => l.request_id === 'e2e-accesslog-default');
    assert.equal(line.level, 'info');
    assert.ok(gw.stderrText().split('\n').some((l) => l.includes('"level":"info"') && l.includes('tollgate started')));
  });
});

describe('observability.access_log: false', () => {
  let gw: Gateway;
  before(async () => {
    gw = await startGateway({
      config: { proxy: { addr: '127.0.0.1:0' }, observability: { access_log: false, metrics: { prometheus: { addr: '127.0.0.1:0' } } } },
      resources: resources(mock.url),
      env: { E2E_ACCESSLOG_KEY: CALLER_KEY },
    });
  });
  after(() => gw?.stop());

  test('no access line is written; usage events and metrics go on', async () => {
    await chat(gw, 'e2e-accesslog-off');
    const notFound = await fetch(`${gw.proxyUrl}/nowhere`, { headers: { 'x-tollgate-request-id': 'e2e-accesslog-off-404' } });
    await notFound.arrayBuffer();
    const usage = await waitForLines(gw, 'usage', (l) => l.request_id === 'e2e-accesslog-off');
    assert.equal(usage.length, 1, 'the usage event is still written');
    // The usage line went through the same batched stream: an access line would be out by now.
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(logLines(gw, 'access'), []);
    const text = await (await fetch(`${gw.metricsUrl}/metrics`)).text();
    assert.match(text, /^tollgate_requests_total\{endpoint="\/v1\/chat\/completions",provider="openai",model="fast",status="200"\} 1$/m);
  });
});

describe('observability.log_level: warn', () => {
  let gw: Gateway;
  before(async () => {
    gw = await startGateway({
      config: { proxy: { addr: '127.0.0.1:0' }, observability: { log_level: 'warn', metrics: { prometheus: { addr: '127.0.0.1:0' } } } },
      resources: resources(mock.url),
      env: { E2E_ACCESSLOG_KEY: CALLER_KEY },
    });
  });
  after(() => gw?.stop());

  test('no info line is written (startup and access log included); usage events are data and still are', async () => {
    await chat(gw, 'e2e-loglevel-warn');
    const usage = await waitForLines(gw, 'usage', (l) => l.request_id === 'e2e-loglevel-warn');
    assert.equal(usage.length, 1);
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(logLines(gw, 'access'), []);
    const infoLines = gw.stderrText().split('\n').filter((l) => l.includes('"level":"info"') && !l.includes('"type":"usage"'));
    assert.deepEqual(infoLines, []);
  });
});
