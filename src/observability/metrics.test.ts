import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { loadConfig } from '../config/load.ts';
import { RequestContext } from '../http/context.ts';
import { requestSample } from './access-log.ts';
import { DEFAULT_BUCKETS, Metrics, NAME_LABELS, outcome, statusClass, type RequestSample } from './metrics.ts';

const NAMES = { api_key_name: 'caller', team_name: 'blue', provider_key_name: 'up', policy_name: 'p', user_name: 'ann' };

function sample(over: Partial<RequestSample> = {}): RequestSample {
  return {
    endpoint: '/v1/chat/completions', llm: true, provider: 'openai', model: 'fast', upstreamModel: 'gpt-4o-mini', providerKeyId: 'pk', apiKeyId: 'ak',
    status: 200, stream: true, fallback: false, names: NAMES, seconds: 0.3, upstreamSeconds: 0.25, downstreamTtftSeconds: 0.05, upstreamTtftSeconds: 0.04,
    inputTokens: 10, outputTokens: 4, totalTokens: 14, ...over,
  };
}

async function series(m: Metrics): Promise<string[]> {
  return (await m.registry.metrics()).split('\n').filter((l) => l !== '' && !l.startsWith('#'));
}

test('a sample that differs from the one before in any label field is recorded in its own series', async () => {
  const nameLabels = Object.fromEntries(NAME_LABELS.map((n) => [n, true]));
  const exposition = async (first: RequestSample, second: RequestSample): Promise<string[]> => {
    const m = new Metrics({ processMetrics: false, nameLabels });
    m.record(first);
    m.record(second);
    return (await series(m)).sort();
  };
  const variants: Array<Partial<RequestSample>> = [
    { endpoint: '/v1/embeddings' }, { provider: 'anthropic' }, { model: 'slow' }, { upstreamModel: 'gpt-4o' }, { providerKeyId: 'pk2' },
    { apiKeyId: 'ak2' }, { status: 201 }, { stream: false }, { fallback: true }, { llm: false },
    ...NAME_LABELS.map((n) => ({ names: { ...NAMES, [n]: 'other' } })),
  ];
  const base = sample();
  for (const v of variants) {
    const other = sample(v);
    // Recorded one after the other, or the other way round: the same series, each counted once.
    assert.deepEqual(await exposition(base, other), await exposition(other, base), JSON.stringify(v));
  }
});

test('the histogram defaults are the config defaults', () => {
  const r = loadConfig({ env: {} });
  assert.ok(r.ok);
  assert.deepEqual(r.config.observability.metrics.buckets, DEFAULT_BUCKETS);
});

test('one request is recorded in every request family, TTFT and e2e latency by side', async () => {
  const m = new Metrics({ processMetrics: false });
  m.record(sample());
  m.record(sample());
  const lines = await series(m);
  const one = (prefix: string, ...parts: string[]) => {
    const found = lines.filter((l) => l.startsWith(prefix) && parts.every((p) => l.includes(p)));
    assert.ok(found.length > 0, `${prefix} ${parts.join(' ')} missing in:\n${lines.join('\n')}`);
    return found;
  };
  one('tollgate_requests_total{', 'status="200"', '} 2');
  one('tollgate_proxy_requests_total{', 'outcome="success"', 'is_fallback="false"', 'api_key_id="ak"', 'provider_key_id="pk"', '} 2');
  one('tollgate_llm_requests_total{', 'upstream_model="gpt-4o-mini"', '} 2');
  one('tollgate_proxy_request_duration_seconds_count{', '} 2');
  one('tollgate_llm_request_duration_seconds_count{', '} 2');
  one('tollgate_request_e2e_latency_seconds_count{', 'side="downstream"', 'status_class="2xx"', '} 2');
  one('tollgate_request_e2e_latency_seconds_count{', 'side="upstream"', '} 2');
  one('tollgate_request_ttft_seconds_count{', 'side="downstream"', '} 2');
  one('tollgate_request_ttft_seconds_count{', 'side="upstream"', '} 2');
  one('tollgate_llm_time_to_first_token_seconds_count{', 'side="upstream"', '} 2');
  one('tollgate_llm_input_tokens_total{', '} 20');
  one('tollgate_llm_output_tokens_total{', '} 8');
  one('tollgate_llm_total_tokens_total{', '} 28');
  assert.equal(lines.filter((l) => l.startsWith('tollgate_proxy_failed_requests_total')).length, 0, 'a 200 is not a failure');
  assert.equal(lines.filter((l) => l.includes('api_key_name')).length, 0, 'name labels are off by default');
});

test('failures, cancellations and non-model requests land in their families only', async () => {
  const m = new Metrics({ processMetrics: false });
  m.record(sample({ status: 499, stream: false }));
  m.record(sample({ status: 401, stream: false, llm: false, model: 'unknown', upstreamModel: 'unknown', providerKeyId: 'unknown', apiKeyId: 'unknown', upstreamSeconds: undefined }));
  const lines = await series(m);
  assert.ok(lines.some((l) => l.startsWith('tollgate_proxy_failed_requests_total{') && l.includes('status="499"') && l.includes('outcome="client_cancelled"')));
  assert.ok(lines.some((l) => l.startsWith('tollgate_proxy_failed_requests_total{') && l.includes('status="401"') && l.includes('outcome="client_error"')));
  assert.ok(lines.some((l) => l.startsWith('tollgate_proxy_client_cancelled_requests_total{') && l.endsWith(' 1')));
  assert.equal(lines.filter((l) => l.startsWith('tollgate_llm_requests_total{') && l.includes('status="401"')).length, 0);
  assert.equal(lines.filter((l) => l.startsWith('tollgate_request_ttft_seconds_count')).length, 0, 'TTFT is for streams');
});

test('a series never recorded stays out of the exposition: no upstream side without upstream times, no tokens without counts', async () => {
  const m = new Metrics({ processMetrics: false });
  m.record(sample({ upstreamSeconds: undefined, upstreamTtftSeconds: undefined, inputTokens: undefined, outputTokens: undefined, totalTokens: undefined }));
  const lines = await series(m);
  assert.ok(lines.some((l) => l.startsWith('tollgate_request_ttft_seconds_count{') && l.includes('side="downstream"')));
  assert.ok(lines.some((l) => l.startsWith('tollgate_llm_time_to_first_token_seconds_count{') && l.includes('side="downstream"')));
  assert.deepEqual(lines.filter((l) => l.includes('side="upstream"')), []);
  assert.deepEqual(lines.filter((l) => /^tollgate_(llm_\w+_tokens_total|tokens_consumed_total)\{/.test(l)), []);
});

test('usage events are counted by operation and status class, one series per class', async () => {
  const m = new Metrics({ processMetrics: false });
  m.usageEmitted('chat', 200);
  m.usageEmitted('chat', 201);
  m.usageEmitted('chat', 404);
  const lines = (await series(m)).filter((l) => l.startsWith('tollgate_usage_events_emitted_total'));
  assert.deepEqual(lines, [
    'tollgate_usage_events_emitted_total{operation="chat",status_class="2xx"} 2',
    'tollgate_usage_events_emitted_total{operation="chat",status_class="4xx"} 1',
  ]);
});

test('readable name labels appear only when enabled', async () => {
  const m = new Metrics({ processMetrics: false, nameLabels: { api_key_name: true, provider_key_name: true } });
  assert.deepEqual(m.nameLabels, ['api_key_name', 'provider_key_name']);
  m.record(sample({ status: 499 }));
  const lines = await series(m);
  const proxy = lines.find((l) => l.startsWith('tollgate_proxy_requests_total{'));
  assert.match(proxy ?? '', /api_key_name="caller"/);
  assert.match(proxy ?? '', /provider_key_name="up"/);
  assert.doesNotMatch(proxy ?? '', /team_name|user_name|policy_name/);
  assert.match(lines.find((l) => l.startsWith('tollgate_proxy_client_cancelled_requests_total{')) ?? '', /provider_key_name="up"/);
});

test('configured buckets are used', async () => {
  const m = new Metrics({ processMetrics: false, buckets: { request_ttft: [0.5, 7] } });
  m.record(sample());
  const text = await m.registry.metrics();
  assert.match(text, /tollgate_request_ttft_seconds_bucket\{le="7",side="downstream"/);
  assert.doesNotMatch(text, /tollgate_request_ttft_seconds_bucket\{le="0.25"/);
});

test('status classes and outcomes', () => {
  assert.equal(statusClass(204), '2xx');
  assert.equal(statusClass(0), 'unknown');
  assert.deepEqual([200, 401, 429, 499, 502].map(outcome), ['success', 'client_error', 'rate_limited', 'client_cancelled', 'upstream_error']);
});

test('label values are bounded: unknown for absent dimensions, a wildcard alias never passes the caller text', () => {
  const ctx = new RequestContext({ method: 'GET', headers: {} } as unknown as IncomingMessage, {} as ServerResponse, 'r', '127.0.0.1');
  ctx.status = 404;
  const s = requestSample(ctx, ['api_key_name', 'team_name']);
  assert.equal(s.endpoint, 'other');
  for (const v of [s.provider, s.model, s.upstreamModel, s.providerKeyId, s.apiKeyId, s.names.api_key_name, s.names.team_name]) assert.equal(v, 'unknown');
  ctx.model = 'openai/*';
  ctx.upstreamModel = 'anything-the-caller-typed';
  ctx.apiKeyId = 'ak';
  ctx.apiKeyTeam = 'blue';
  const w = requestSample(ctx, ['team_name', 'user_name']);
  assert.equal(w.upstreamModel, 'wildcard');
  assert.equal(w.names.team_name, 'blue');
  assert.equal(w.names.user_name, 'unknown');
});
