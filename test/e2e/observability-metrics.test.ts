// E2E: the Prometheus families of spec 2 §6.2 after real traffic (deltas per family and label
// set), readable name labels when enabled, bounded label values, /status/config (revision, hash,
// applied time, last reload, rejected resources) and the heap diagnostics listener.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import YAML from 'yaml';
import { startGateway, type Gateway } from '../harness/spawn.ts';
import { startMockUpstream, type MockUpstream } from '../harness/mock-upstream.ts';
import { anthropicFrames, errorReplyFor, openAIFrames, replyFor, type Turn } from '../harness/provider-wire.ts';
import { waitForLines } from '../harness/log-lines.ts';

const CALLER_KEY = 'sk-e2e-metrics-caller-0b7e';
const TURN: Turn = { text: 'metered answer', usage: { input: 12, output: 4 } };

let mock: MockUpstream;
let gw: Gateway;
let debugUrl: string;

const RESOURCES = (mockUrl: string) => ({
  _format_version: '1',
  provider_keys: [
    { display_name: 'oa-key', provider: 'openai', api_key: 'sk-up-metrics', api_base: `${mockUrl}/v1` },
    { display_name: 'an-key', provider: 'anthropic', api_key: 'sk-up-metrics', api_base: mockUrl },
  ],
  models: [
    { display_name: 'oa', provider: 'openai', model_name: 'oa-up', provider_key: 'oa-key' },
    { display_name: 'an', provider: 'anthropic', model_name: 'an-up', provider_key: 'an-key' },
    // Never called: /status/models lists it all the same.
    { display_name: 'idle', provider: 'openai', model_name: 'idle-up', provider_key: 'oa-key' },
  ],
  api_keys: [{ display_name: 'caller', key_env: 'E2E_METRICS_KEY', allowed_models: ['oa', 'an'], team_id: 'blue-team', user_name: 'ann' }],
  // Never reached: it is here so that the caller's requests carry a policy name.
  rate_limit_policies: [{ name: 'caller-rpm', scope: 'api_key', scope_ref: 'caller', window: 'minute', max_requests: 100000 }],
});

before(async () => {
  mock = await startMockUpstream();
  gw = await startGateway({
    config: {
      proxy: { addr: '127.0.0.1:0' },
      observability: {
        metrics: {
          prometheus: { addr: '127.0.0.1:0' },
          labels: { api_key_name: true, team_name: true, provider_key_name: true, policy_name: true, user_name: true },
          buckets: { request_ttft: [0.05, 0.5, 5] },
        },
        debug: { enabled: true, addr: '127.0.0.1:0' },
      },
      upstream: { timeout_ms: 2000, retries: 0 },
    },
    resources: RESOURCES(mock.url),
    env: { E2E_METRICS_KEY: CALLER_KEY },
  });
  const ready = JSON.parse(gw.stdout.find((l) => l.includes('"ready"')) ?? '{}');
  debugUrl = `http://${ready.listeners.debug}`;
});
after(async () => {
  await gw?.stop();
  await mock?.close();
});

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

async function scrape(): Promise<{ text: string; samples: Sample[] }> {
  const res = await fetch(`${gw.metricsUrl}/metrics`);
  assert.equal(res.status, 200);
  const text = await res.text();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const m = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return { text, samples };
}

const sum = (samples: Sample[], name: string, match: Record<string, string> = {}): number =>
  samples.filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v)).reduce((a, s) => a + s.value, 0);

let seq = 0;
async function call(path: string, body: object | undefined, opts: { key?: string | null; abort?: boolean } = {}): Promise<{ id: string; status: number }> {
  const id = `e2e-metrics-${++seq}`;
  const headers: Record<string, string> = { 'x-tollgate-request-id': id, 'content-type': 'application/json' };
  if (opts.key !== null) headers.authorization = `Bearer ${opts.key ?? CALLER_KEY}`;
  const ac = new AbortController();
  const res = await fetch(gw.proxyUrl + path, { method: body === undefined ? 'GET' : 'POST', headers, body: body === undefined ? undefined : JSON.stringify(body), signal: ac.signal });
  if (opts.abort) {
    const reader = res.body!.getReader();
    await reader.read();
    ac.abort();
    await reader.cancel().catch(() => undefined);
  } else {
    await res.arrayBuffer();
  }
  return { id, status: res.status };
}

const chat = (stream = false) => ({ model: 'oa', messages: [{ role: 'user', content: 'hi' }], stream });
const messages = (stream = false) => ({ model: 'an', max_tokens: 32, messages: [{ role: 'user', content: 'hi' }], stream });

test('real traffic moves every request family by the expected delta, per label set', async () => {
  const { samples: before } = await scrape();
  mock.setFallback((req) => {
    if (req.json?.model === 'an-up' && req.json?.stream !== true) return errorReplyFor(503, 'overloaded_error', 'busy')(req);
    if (req.json?.stream === true) {
      return req.json?.model === 'an-up'
        ? { sse: anthropicFrames(TURN, 'an-up'), done: false, delayBetweenEventsMs: 150 }
        : { sse: openAIFrames(TURN, 'oa-up') };
    }
    return replyFor(TURN)(req);
  });
  const ids = [
    await call('/v1/chat/completions', chat()),
    await call('/v1/chat/completions', chat(true)),
    await call('/v1/chat/completions', chat(), { key: null }),
    await call('/v1/messages', messages()),
    await call('/v1/messages', messages(true), { abort: true }),
    await call('/v1/models', undefined),
    await call('/nowhere/at/all', undefined),
    await call('/v1/models/oa', undefined),
    await call('/v1/models/no-such-model', undefined),
  ];
  assert.deepEqual(ids.map((r) => r.status), [200, 200, 401, 502, 200, 200, 404, 200, 404]);
  // Every request is finalized once its access line is out.
  for (const r of ids) await waitForLines(gw, 'access', (l) => l.request_id === r.id);
  const { samples: afterScrape, text } = await scrape();
  const delta = (name: string, match: Record<string, string> = {}) => sum(afterScrape, name, match) - sum(before, name, match);

  const chatOk = { endpoint: '/v1/chat/completions', model: 'oa', provider: 'openai' };
  const names = { api_key_name: 'caller', team_name: 'blue-team', user_name: 'ann', provider_key_name: 'oa-key', policy_name: 'caller-rpm' };
  assert.equal(delta('tollgate_requests_total', { ...chatOk, status: '200' }), 2);
  assert.equal(delta('tollgate_request_duration_seconds_count', { ...chatOk, status: '200' }), 2);
  assert.equal(delta('tollgate_proxy_requests_total', { ...chatOk, ...names, upstream_model: 'oa-up', status: '200', outcome: 'success', is_fallback: 'false' }), 2);
  assert.equal(delta('tollgate_proxy_requests_total', { ...chatOk, stream: 'true', status: '200' }), 1);
  assert.equal(delta('tollgate_proxy_request_duration_seconds_count', { ...chatOk, status: '200' }), 2);
  assert.equal(delta('tollgate_llm_requests_total', { ...chatOk, ...names, status: '200', outcome: 'success' }), 2);
  assert.equal(delta('tollgate_llm_request_duration_seconds_count', { ...chatOk, status: '200' }), 2);
  assert.equal(delta('tollgate_proxy_failed_requests_total', { endpoint: '/v1/chat/completions', status: '401', outcome: 'client_error', model: 'unknown', api_key_id: 'unknown', api_key_name: 'unknown' }), 1);
  assert.equal(delta('tollgate_proxy_failed_requests_total', { endpoint: '/v1/messages', model: 'an', status: '502', outcome: 'upstream_error', provider_key_name: 'an-key' }), 1);
  assert.equal(delta('tollgate_proxy_failed_requests_total', { endpoint: '/v1/messages', status: '499', outcome: 'client_cancelled' }), 1);
  assert.equal(delta('tollgate_proxy_client_cancelled_requests_total', { endpoint: '/v1/messages', model: 'an', provider: 'anthropic', provider_key_name: 'an-key' }), 1);
  assert.equal(delta('tollgate_proxy_requests_total', { endpoint: '/v1/models', status: '200' }), 1);
  assert.equal(delta('tollgate_llm_requests_total', { endpoint: '/v1/models' }), 0, '/v1/models serves no model');
  assert.equal(delta('tollgate_proxy_requests_total', { endpoint: 'other', status: '404' }), 1, 'unrouted paths share one label value');
  // A model's own path is counted under its template, never as the raw path.
  assert.equal(delta('tollgate_proxy_requests_total', { endpoint: '/v1/models/{model}', model: 'oa', status: '200' }), 1);
  assert.equal(delta('tollgate_proxy_requests_total', { endpoint: '/v1/models/{model}', model: 'unknown', status: '404' }), 1);
  assert.doesNotMatch(text, /endpoint="\/v1\/models\/(oa|no-such-model)"/);
  // Side-labelled latency and TTFT.
  assert.equal(delta('tollgate_request_e2e_latency_seconds_count', { ...chatOk, side: 'downstream', status_class: '2xx' }), 2);
  assert.equal(delta('tollgate_request_e2e_latency_seconds_count', { ...chatOk, side: 'upstream', status_class: '2xx' }), 2);
  assert.equal(delta('tollgate_request_e2e_latency_seconds_count', { endpoint: '/v1/chat/completions', side: 'upstream', status_class: '4xx' }), 0, 'a refusal never reached an upstream');
  assert.equal(delta('tollgate_request_ttft_seconds_count', { ...chatOk, side: 'downstream', stream: 'true' }), 1);
  assert.equal(delta('tollgate_request_ttft_seconds_count', { ...chatOk, side: 'upstream', stream: 'true' }), 1);
  assert.equal(delta('tollgate_request_ttft_seconds_count', { ...chatOk, stream: 'false' }), 0, 'TTFT is for streams');
  assert.equal(delta('tollgate_llm_time_to_first_token_seconds_count', { ...chatOk, ...names, side: 'downstream' }), 1);
  assert.equal(delta('tollgate_llm_time_to_first_token_seconds_count', { ...chatOk, side: 'upstream' }), 1);
  assert.match(text, /tollgate_request_ttft_seconds_bucket\{le="0.5",side="downstream"/, 'configured TTFT buckets');
  // Tokens.
  assert.equal(delta('tollgate_llm_input_tokens_total', { ...chatOk, ...names }), 24);
  assert.equal(delta('tollgate_llm_output_tokens_total', chatOk), 8);
  assert.equal(delta('tollgate_llm_total_tokens_total', chatOk), 32);
  assert.equal(delta('tollgate_tokens_consumed_total', { provider: 'openai', model: 'oa', token_type: 'input' }), 24);
  // Usage events: one per model-serving request (the 401 included), none for /v1/models or 404.
  assert.equal(delta('tollgate_usage_events_emitted_total', { operation: 'chat', status_class: '2xx' }), 2);
  assert.equal(delta('tollgate_usage_events_emitted_total', { operation: 'chat', status_class: '4xx' }), 1);
  assert.equal(delta('tollgate_usage_events_emitted_total', { operation: 'messages', status_class: '5xx' }), 1);
  assert.equal(delta('tollgate_usage_events_emitted_total', { operation: 'messages', status_class: '4xx' }), 1, 'the 499');
  assert.equal(delta('tollgate_usage_events_emitted_total'), 5);
  assert.equal(delta('tollgate_usage_events_rejected_total'), 0);
});

test('every spec family is exposed, and no label value is ever empty', async () => {
  const { text, samples } = await scrape();
  for (const family of [
    'tollgate_requests_total', 'tollgate_request_duration_seconds', 'tollgate_proxy_requests_total', 'tollgate_proxy_failed_requests_total',
    'tollgate_proxy_request_duration_seconds', 'tollgate_llm_requests_total', 'tollgate_llm_request_duration_seconds',
    'tollgate_request_e2e_latency_seconds', 'tollgate_request_ttft_seconds', 'tollgate_llm_time_to_first_token_seconds',
    'tollgate_guardrail_latency_seconds', 'tollgate_guardrail_bypasses_total', 'tollgate_ratelimit_rejections_total',
    'tollgate_usage_events_emitted_total', 'tollgate_usage_events_rejected_total', 'tollgate_otlp_fanout_drops_total',
    'tollgate_proxy_client_cancelled_requests_total', 'tollgate_llm_input_tokens_total', 'tollgate_llm_output_tokens_total',
    'tollgate_llm_total_tokens_total',
  ]) {
    assert.match(text, new RegExp(`^# TYPE ${family} `, 'm'), `${family} is not exposed`);
  }
  for (const s of samples.filter((x) => x.name.startsWith('tollgate_') && !x.name.startsWith('tollgate_nodejs') && !x.name.startsWith('tollgate_process'))) {
    for (const [k, v] of Object.entries(s.labels)) assert.notEqual(v, '', `${s.name} has an empty ${k}`);
  }
});

test('/status/config: source, revision, hash, applied time; a rejected reload lists its errors and keeps the hash', async () => {
  const status = async () => (await (await fetch(`${gw.metricsUrl}/status/config`)).json()) as any;
  const first = await status();
  assert.equal(first.source.type, 'file');
  assert.equal(first.revision, 1);
  assert.match(first.hash, /^sha256:[0-9a-f]{64}$/);
  assert.ok(!Number.isNaN(Date.parse(first.applied_at)));
  assert.deepEqual(first.rejected_resources, []);
  assert.equal(first.last_reload, undefined);

  fs.writeFileSync(gw.resourcesPath!, YAML.stringify({ ...RESOURCES(mock.url), models: [{ display_name: 'oa', provider: 'openai', provider_key: 'nope' }] }));
  gw.signal('SIGHUP');
  let failed: any;
  for (let i = 0; i < 100 && failed?.last_reload?.ok !== false; i++) {
    await new Promise((r) => setTimeout(r, 50));
    failed = await status();
  }
  assert.equal(failed.last_reload.ok, false);
  assert.ok(failed.rejected_resources.length > 0);
  assert.ok(failed.rejected_resources.every((r: any) => typeof r.error === 'string' && r.error.length > 0));
  assert.equal(failed.hash, first.hash, 'the previous resources keep serving');
  assert.equal(failed.revision, 1);

  fs.writeFileSync(gw.resourcesPath!, YAML.stringify({ ...RESOURCES(mock.url), models: [...RESOURCES(mock.url).models, { display_name: 'extra', provider: 'openai', model_name: 'x', provider_key: 'oa-key' }] }));
  gw.signal('SIGHUP');
  let applied: any;
  for (let i = 0; i < 100 && applied?.revision !== 2; i++) {
    await new Promise((r) => setTimeout(r, 50));
    applied = await status();
  }
  assert.equal(applied.revision, 2);
  assert.notEqual(applied.hash, first.hash);
  assert.deepEqual(applied.rejected_resources, []);
  const { samples } = await scrape();
  assert.ok(sum(samples, 'tollgate_config_last_reload_success_timestamp_seconds') > 1_600_000_000);
});

test('/status/models: a row for every model, one never called included', async () => {
  const res = await fetch(`${gw.metricsUrl}/status/models`);
  assert.equal(res.status, 200);
  const rows: any[] = ((await res.json()) as any).models;
  const names = rows.map((r) => r.model);
  for (const m of ['an', 'idle', 'oa']) assert.ok(names.includes(m), `${m} in ${JSON.stringify(names)}`);
  const idle = rows.find((r) => r.model === 'idle');
  assert.deepEqual(
    { ...idle, key: undefined },
    {
      model: 'idle', upstream_model: 'idle-up', key: undefined, state: 'healthy', in_flight: 0, latency_ewma_ms: null,
      consecutive_failures: 0, cooling_down_until: null, unhealthy: false, last_error: null, last_error_at: null,
    },
  );
  assert.ok(rows.find((r) => r.model === 'oa').latency_ewma_ms > 0, 'the called model has its latency');
});

test('heap diagnostics on the debug listener: statistics by default, a V8 snapshot on request', async () => {
  const stats = await fetch(`${debugUrl}/debug/pprof/heap`);
  assert.equal(stats.status, 200);
  const body = (await stats.json()) as any;
  assert.ok(body.heap.used_heap_size > 0);
  assert.ok(Array.isArray(body.heap_spaces));
  const missing = await fetch(`${debugUrl}/other`);
  await missing.arrayBuffer();
  assert.equal(missing.status, 404);
  const snap = await fetch(`${debugUrl}/debug/pprof/heap?format=heapsnapshot`);
  assert.equal(snap.status, 200);
  const text = await snap.text();
  assert.ok(JSON.parse(text).snapshot.meta, 'a V8 heap snapshot');
});
