// E2E: the otlp_http observability exporter against a local receiver: usage events arrive as
// spans (occurred_at as end time, GenAI attributes, captured headers, the exporter's own
// headers), a 503 is retried and the batch delivered once, a 400 drops the batch at once and
// counts tollgate_otlp_fanout_drops_total{reason="permanent_error"}.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type Gateway } from '../harness/spawn.ts';
import { startMockUpstream, type MockUpstream } from '../harness/mock-upstream.ts';
import { attr, startOtlpReceiver, until, type OtlpReceiver } from '../harness/otlp-receiver.ts';
import { replyFor } from '../harness/provider-wire.ts';
import { waitForLines } from '../harness/log-lines.ts';

const CALLER_KEY = 'sk-e2e-otlp-caller-33f1';
const UPSTREAM_SECRET = 'sk-e2e-otlp-upstream-77d0';
const COLLECTOR_TOKEN = 'collector-token-e2e';

let mock: MockUpstream;
let rx: OtlpReceiver;
let refusing: OtlpReceiver;
let gw: Gateway;

before(async () => {
  mock = await startMockUpstream();
  mock.setFallback(replyFor({ text: 'traced', usage: { input: 9, output: 2 } }));
  rx = await startOtlpReceiver();
  refusing = await startOtlpReceiver();
  gw = await startGateway({
    config: {
      proxy: { addr: '127.0.0.1:0' },
      observability: { metrics: { prometheus: { addr: '127.0.0.1:0' } }, usage_event: { request_headers: ['x-team'] } },
      upstream: { timeout_ms: 5000, retries: 0 },
    },
    resources: {
      _format_version: '1',
      provider_keys: [{ display_name: 'up', provider: 'openai', api_key: UPSTREAM_SECRET, api_base: `${mock.url}/v1` }],
      models: [{ display_name: 'fast', provider: 'openai', model_name: 'gpt-up', provider_key: 'up' }],
      api_keys: [{ display_name: 'caller', key_env: 'E2E_OTLP_KEY', allowed_models: ['fast'] }],
      observability_exporters: [
        { name: 'collector', kind: 'otlp_http', endpoint: rx.url, headers: { authorization: 'Bearer ${OTLP_TOKEN}' } },
        { name: 'refusing', kind: 'otlp_http', endpoint: refusing.url },
        { name: 'off', kind: 'otlp_http', endpoint: refusing.url, enabled: false },
      ],
    },
    env: { E2E_OTLP_KEY: CALLER_KEY, OTLP_TOKEN: COLLECTOR_TOKEN },
  });
});
after(async () => {
  await gw?.stop();
  await Promise.all([mock?.close(), rx?.close(), refusing?.close()]);
});

let seq = 0;
async function chat(): Promise<string> {
  const id = `e2e-otlp-${++seq}`;
  const res = await fetch(`${gw.proxyUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${CALLER_KEY}`, 'x-tollgate-request-id': id, 'x-team': 'blue' },
    body: JSON.stringify({ model: 'fast', messages: [{ role: 'user', content: 'hi' }] }),
  });
  await res.arrayBuffer();
  assert.equal(res.status, 200);
  return id;
}

const spansOf = (r: OtlpReceiver, id: string, accepted = true): any[] =>
  (accepted ? r.acceptedSpans() : r.received.flatMap((x) => x.body.resourceSpans[0].scopeSpans[0].spans)).filter((s: any) => attr(s, 'tollgate.request_id')?.stringValue === id);

async function drops(match: Record<string, string>): Promise<number> {
  const text = await (await fetch(`${gw.metricsUrl}/metrics`)).text();
  let n = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith('tollgate_otlp_fanout_drops_total{')) continue;
    if (Object.entries(match).every(([k, v]) => line.includes(`${k}="${v}"`))) n += Number(line.split(' ').pop());
  }
  return n;
}

test('a usage event arrives as a span: occurred_at is its end time, GenAI attributes, captured headers', async () => {
  const id = await chat();
  const [usage] = await waitForLines(gw, 'usage', (l) => l.request_id === id);
  const span = await until('the span', () => spansOf(rx, id)[0]);
  const request = rx.received.find((r) => r.status === 200)!;
  assert.equal(request.path, '/v1/traces');
  assert.equal(request.headers['content-type'], 'application/x-protobuf');
  assert.equal(request.headers.authorization, `Bearer ${COLLECTOR_TOKEN}`, 'the exporter headers, ${VAR} resolved');
  assert.equal(BigInt(span.endTimeUnixNano), BigInt(Date.parse(usage.occurred_at)) * 1_000_000n);
  assert.ok(BigInt(span.startTimeUnixNano) < BigInt(span.endTimeUnixNano));
  assert.equal(span.name, 'chat fast');
  assert.deepEqual(attr(span, 'gen_ai.operation.name'), { stringValue: 'chat' });
  assert.deepEqual(attr(span, 'gen_ai.request.model'), { stringValue: 'fast' });
  assert.deepEqual(attr(span, 'gen_ai.response.model'), { stringValue: 'gpt-up' });
  assert.deepEqual(attr(span, 'gen_ai.usage.input_tokens'), { intValue: '9' });
  assert.deepEqual(attr(span, 'gen_ai.usage.output_tokens'), { intValue: '2' });
  assert.deepEqual(attr(span, 'http.response.status_code'), { intValue: '200' });
  assert.deepEqual(attr(span, 'http.request.header.x-team'), { arrayValue: { values: [{ stringValue: 'blue' }] } });
  assert.deepEqual(attr(span, 'tollgate.model_id'), { stringValue: usage.model_id });
  const payload = Buffer.concat(rx.received.map((r) => r.raw));
  for (const secret of [CALLER_KEY, UPSTREAM_SECRET]) assert.ok(!payload.includes(secret), `export carries ${secret}`);
});

test('the collector answers 503 then 200: the batch is retried and delivered exactly once', async () => {
  await until('the receiver to be idle', () => (rx.received.every((r) => r.status === 200) ? true : undefined));
  rx.reset();
  rx.script(503);
  const id = await chat();
  await until('a second delivery attempt', () => (rx.received.length >= 2 ? true : undefined));
  assert.deepEqual(rx.received.slice(0, 2).map((r) => r.status), [503, 200]);
  assert.equal(spansOf(rx, id, false).length, 2, 'sent twice');
  assert.equal(spansOf(rx, id).length, 1, 'accepted once');
});

test('the collector answers 400: the batch is dropped at once and counted as permanent_error', async () => {
  const before = await drops({ exporter: 'refusing', reason: 'permanent_error' });
  refusing.reset();
  refusing.script(400);
  const id = await chat();
  await until('the refused delivery', () => (refusing.received.length >= 1 ? true : undefined));
  assert.equal(refusing.received[0].status, 400);
  assert.equal(spansOf(refusing, id, false).length, 1);
  let after = before;
  for (let i = 0; i < 100 && after === before; i++) {
    await new Promise((r) => setTimeout(r, 50));
    after = await drops({ exporter: 'refusing', reason: 'permanent_error' });
  }
  assert.equal(after - before, 1, 'one event dropped');
  // No retry of the refused batch: wait past the first backoff and look again.
  await new Promise((r) => setTimeout(r, 1500));
  assert.equal(spansOf(refusing, id, false).length, 1, 'never sent again');
  const warn = gw.stderrText().split('\n').find((l) => l.includes('otlp export refused'));
  assert.ok(warn, 'the drop is logged');
  assert.ok(!warn.includes(COLLECTOR_TOKEN));
});

test('a disabled exporter receives nothing', async () => {
  // `off` points at the refusing receiver: every request it saw came from the `refusing` exporter,
  // one span per event, so no event was delivered there twice.
  const ids = refusing.received.flatMap((r) => r.body.resourceSpans[0].scopeSpans[0].spans).map((s: any) => attr(s, 'tollgate.request_id').stringValue);
  assert.equal(new Set(ids).size, ids.length);
});
