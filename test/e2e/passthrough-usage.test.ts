// E2E, spec 3 §6: one usage event per pass-through request (operation passthrough, route, caller,
// client_identity, requested_model by request shape, token counts per the usage table, empty
// model_id), read from the gateway's usage log lines.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import type { Gateway } from '../harness/spawn.ts';
import { useProxyFixture } from '../harness/proxy-fixture.ts';
import { chatChunks, chatCompletion, type MockUpstream, type Reply } from '../harness/mock-upstream.ts';
import { rawRequest, usageLinesOf, usageOf } from '../harness/echo-upstream.ts';
import { deriveId } from '../../src/resources/ids.ts';
import { waitForLines } from '../harness/log-lines.ts';

const KEY = 'sk-pt-usage';
let mock: MockUpstream;
let gw: Gateway;

useProxyFixture({
  resources: (m) => ({
    _format_version: '1',
    provider_keys: [{ display_name: 'up', provider: 'openai', api_key: 'sk-provider' }],
    api_keys: [{ display_name: 'caller', key_env: 'PT_KEY', allowed_models: [], allowed_routes: ['*'] }],
    passthrough_routes: [
      { name: 'vendor', path_prefix: '/passthrough/vendor', target_url: m, provider_key: 'up', identity_header: 'x-device-user' },
      { name: 'byo', path_prefix: '/passthrough/byo', target_url: m, credential_mode: 'forward_client' },
    ],
  }),
  env: { PT_KEY: KEY },
  ready: (fx) => ({ mock, gw } = fx),
});

const usage = (u: object) => ({ usage: u });

/** Send `body` to the vendor route with the upstream answering `reply`; returns the usage line. */
async function usageFor(body: unknown, reply: Reply, path = '/passthrough/vendor/v1/x', headers: Record<string, string> = {}): Promise<any> {
  mock.script(reply);
  const res = await rawRequest(gw.proxyUrl, {
    method: 'POST', path, body: typeof body === 'string' ? body : JSON.stringify(body),
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', ...headers },
  });
  assert.ok(res.status < 500, res.text);
  return usageOf(gw, res.headers['x-tollgate-request-id'] as string);
}

const counts = (u: any) => ({
  prompt: u.prompt_tokens, completion: u.completion_tokens, total: u.total_tokens, cached: u.cached_tokens,
  creation: u.cache_creation_tokens, reasoning: u.reasoning_tokens,
});
const none = { prompt: null, completion: null, total: null, cached: null, creation: null, reasoning: null };

test('the event: operation passthrough, route, caller, model from the body, empty model_id, client_identity', async () => {
  const u = await usageFor({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { json: chatCompletion() }, '/passthrough/vendor/v1/chat/completions', {
    'x-device-user': 'alice@example.com',
  });
  assert.equal(u.type, 'usage');
  assert.equal(u.operation, 'passthrough');
  assert.equal(u.passthrough_route_name, 'vendor');
  assert.equal(u.api_key_id, deriveId('api_keys', 'caller'));
  assert.equal(u.requested_model, 'gpt-4o-mini');
  assert.equal(u.model_id, '');
  assert.equal(u.client_identity, 'alice@example.com');
  assert.equal(u.provider_key_id, deriveId('provider_keys', 'up'));
  assert.equal(u.provider, 'openai');
  assert.equal(u.status, 200);
  assert.equal(u.status_code, 200);
  assert.equal(u.stream, false);
  assert.equal(u.attempt_kind, 'initial');
  assert.match(u.occurred_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.equal(typeof u.latency_ms, 'number');
  assert.deepEqual(counts(u), { ...none, prompt: 12, completion: 7, total: 19, cached: 0, reasoning: 0 });
});

test('timings: upstream head and end, and the head sent to the caller, on buffered and event-stream answers', async () => {
  const json = await usageFor({ model: 'gpt-4o', messages: [] }, { json: chatCompletion(), delayHeadersMs: 120 }, '/passthrough/vendor/v1/chat/completions');
  // A buffered answer's first byte is its head.
  assert.ok(json.upstream_ttft_ms >= 110, `upstream_ttft_ms ${json.upstream_ttft_ms}`);
  assert.ok(json.ttft_ms >= json.upstream_ttft_ms);
  assert.ok(json.upstream_latency_ms >= json.upstream_ttft_ms);
  assert.ok(json.downstream_ttft_ms >= json.ttft_ms && json.downstream_ttft_ms <= json.latency_ms, `downstream_ttft_ms ${json.downstream_ttft_ms}`);

  mock.script({ sse: chatChunks(), delayHeadersMs: 40, delayFirstEventMs: 80, delayBetweenEventsMs: 40 });
  const res = await rawRequest(gw.proxyUrl, {
    method: 'POST', path: '/passthrough/vendor/v1/chat/completions', body: JSON.stringify({ model: 'gpt-4o', stream: true, messages: [] }),
    headers: { authorization: `Bearer ${KEY}` },
  });
  const id = res.headers['x-tollgate-request-id'] as string;
  const sse = await usageOf(gw, id);
  // An event stream's first byte is its first event: the head and the first event's delay.
  assert.ok(sse.upstream_ttft_ms >= 110, `upstream_ttft_ms ${sse.upstream_ttft_ms}`);
  assert.ok(sse.upstream_latency_ms >= sse.upstream_ttft_ms + 35, `upstream_latency_ms ${sse.upstream_latency_ms}`);
  assert.ok(sse.downstream_ttft_ms >= sse.ttft_ms && sse.downstream_ttft_ms < sse.latency_ms - 35, `downstream_ttft_ms ${sse.downstream_ttft_ms}`);
  const [access] = await waitForLines(gw, 'access', (l) => l.request_id === id);
  assert.equal(access.upstream_latency_ms, sse.upstream_latency_ms);
  assert.equal(access.downstream_ttft_ms, sse.downstream_ttft_ms);
});

test('exactly one event per request', async () => {
  mock.script({ json: chatCompletion() });
  const res = await rawRequest(gw.proxyUrl, { method: 'POST', path: '/passthrough/vendor/v1/x', body: '{}', headers: { authorization: `Bearer ${KEY}` } });
  assert.equal((await usageLinesOf(gw, res.headers['x-tollgate-request-id'] as string)).length, 1);
});

test('buffered responses: the responses and completions shapes read every usage field', async () => {
  const responses = await usageFor({ model: 'gpt-4.1', input: 'hi' }, {
    json: { id: 'resp_1', object: 'response', output: [], usage: { input_tokens: 30, output_tokens: 9, total_tokens: 39, input_tokens_details: { cached_tokens: 4 }, output_tokens_details: { reasoning_tokens: 2 } } },
  });
  assert.equal(responses.requested_model, 'gpt-4.1');
  assert.deepEqual(counts(responses), { prompt: 30, completion: 9, total: 39, cached: 4, creation: null, reasoning: 2 });
  const completions = await usageFor({ model: 'gpt-3.5-turbo-instruct', prompt: 'Once' }, { json: { choices: [{ text: 'x' }], ...usage({ prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 }) } });
  assert.equal(completions.requested_model, 'gpt-3.5-turbo-instruct');
  assert.deepEqual(counts(completions), { ...none, prompt: 3, completion: 5, total: 8 });
});

test('buffered messages-style response: cache creation and reads', async () => {
  const u = await usageFor({ model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }, {
    json: { id: 'msg_1', type: 'message', content: [], usage: { input_tokens: 20, output_tokens: 6, cache_creation_input_tokens: 100, cache_read_input_tokens: 50 } },
  });
  assert.deepEqual(counts(u), { ...none, prompt: 20, completion: 6, cached: 50, creation: 100 });
});

test('rerank: input tokens from usage or meta.billed_units only', async () => {
  const body = { model: 'rerank-v3.5', query: 'q', documents: ['a', 'b'] };
  const a = await usageFor(body, { json: { results: [], usage: { prompt_tokens: 11, completion_tokens: 99, total_tokens: 200 } } });
  assert.equal(a.requested_model, 'rerank-v3.5');
  assert.deepEqual(counts(a), { ...none, prompt: 11 });
  const b = await usageFor(body, { json: { results: [], usage: { total_tokens: 13 } } });
  assert.deepEqual(counts(b), { ...none, prompt: 13 });
  const c = await usageFor(body, { json: { results: [], meta: { billed_units: { input_tokens: 14, search_units: 1 } } } });
  assert.deepEqual(counts(c), { ...none, prompt: 14 });
});

test('native envelope: total minus output, else input plus top-level image_tokens', async () => {
  const body = { model: 'qwen-vl-max', input: { messages: [] }, parameters: {} };
  const a = await usageFor(body, { json: { output: {}, usage: { input_tokens: 999, output_tokens: 10, total_tokens: 45, image_tokens: 7 } } });
  assert.equal(a.requested_model, 'qwen-vl-max');
  assert.deepEqual(counts(a), { ...none, prompt: 35, completion: 10, total: 45 });
  const b = await usageFor(body, { json: { output: {}, usage: { input_tokens: 20, output_tokens: 5, image_tokens: 7 } } });
  assert.deepEqual(counts(b), { ...none, prompt: 27, completion: 5 });
  const c = await usageFor(body, { json: { output: {}, usage: { prompt_tokens: 20, completion_tokens: 5, input_tokens_details: { image_tokens: 7 } } } });
  assert.deepEqual(counts(c), { ...none, prompt: 20, completion: 5 });
});

test('any other body: no model, no tokens, even when the response reports usage', async () => {
  for (const body of [{ jsonrpc: '2.0', id: 1, method: 'tools/call', params: {} }, { purpose: 'batch', model: 'x' }, 'plain text', '']) {
    const u = await usageFor(body, { json: { result: {}, ...usage({ prompt_tokens: 5, completion_tokens: 5 }) } });
    assert.equal(u.requested_model, '');
    assert.deepEqual(counts(u), none);
  }
});

test('a compressed buffered response is decoded on the side for usage', async () => {
  const packed = gzipSync(JSON.stringify(chatCompletion({ usage: { prompt_tokens: 40, completion_tokens: 2 } })));
  const u = await usageFor({ model: 'gpt-4o', messages: [] }, { body: packed, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } });
  assert.equal(u.prompt_tokens, 40);
  assert.equal(u.completion_tokens, 2);
});

test('error responses are recorded with their status and no tokens', async () => {
  const u = await usageFor({ model: 'gpt-4o', messages: [] }, { status: 429, json: { error: { message: 'slow down', type: 'requests' } } });
  assert.equal(u.status, 429);
  assert.equal(u.error_class, 'upstream_status');
  assert.equal(u.prompt_tokens, null);
});

const sse = (events: Array<string | object>, extra: Partial<Reply> = {}): Reply => ({ sse: events, done: false, ...extra });
const data = (o: object) => `data: ${JSON.stringify(o)}\n\n`;

test('event streams, chat shape: the usage the stream reports', async () => {
  const u = await usageFor({ model: 'gpt-4o', stream: true, messages: [] }, { sse: chatChunks({ usage: { prompt_tokens: 9, completion_tokens: 4 } }) });
  assert.equal(u.stream, true);
  assert.equal(u.requested_model, 'gpt-4o');
  assert.deepEqual(counts(u), { ...none, prompt: 9, completion: 4, total: 13, cached: 0, reasoning: 0 });
});

test('event streams, messages style: message_start and message_delta', async () => {
  const u = await usageFor({ model: 'claude-sonnet-4-5', stream: true, messages: [] }, sse([
    `event: message_start\n${data({ type: 'message_start', message: { id: 'm', usage: { input_tokens: 25, output_tokens: 1, cache_read_input_tokens: 5 } } })}`,
    `event: content_block_delta\n${data({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hi' } })}`,
    `event: message_delta\n${data({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 15 } })}`,
    `event: message_stop\n${data({ type: 'message_stop' })}`,
  ]));
  assert.deepEqual(counts(u), { ...none, prompt: 25, completion: 15, cached: 5 });
});

test('event streams, responses shape: the terminal response usage', async () => {
  const u = await usageFor({ model: 'gpt-4.1', stream: true, input: [{ role: 'user', content: 'x' }] }, sse([
    `event: response.created\n${data({ type: 'response.created', response: { id: 'r', usage: null } })}`,
    `event: response.completed\n${data({ type: 'response.completed', response: { id: 'r', usage: { input_tokens: 8, output_tokens: 3, total_tokens: 11 } } })}`,
  ]));
  assert.deepEqual(counts(u), { ...none, prompt: 8, completion: 3, total: 11 });
});

test('opaque streams: top-level usage on any frame, or a labelled flat report', async () => {
  const rerank = { model: 'r', query: 'q', documents: ['a'] };
  const a = await usageFor(rerank, sse([data({ progress: 1 }), data({ done: true, usage: { input_tokens: 3, output_tokens: 4 } })]));
  assert.deepEqual(counts(a), { ...none, prompt: 3, completion: 4 });
  const b = await usageFor({ jsonrpc: '2.0', id: 1, method: 'tools/call' }, sse([data({ jsonrpc: '2.0', id: 1, result: {} }), 'event: usage\ndata: {"prompt_tokens":5,"completion_tokens":6}\n\n']));
  assert.deepEqual(counts(b), { ...none, prompt: 5, completion: 6 });
  const c = await usageFor('', sse(['event: token_usage\ndata: {"input_tokens":7,"output_tokens":1}\n\n']));
  assert.deepEqual(counts(c), { ...none, prompt: 7, completion: 1 });
  // Unlabelled flat reports and nested usage are not read on opaque streams.
  const d = await usageFor({ model: 'x', input: { a: 1 } }, sse([data({ prompt_tokens: 5 }), data({ message: { usage: { input_tokens: 9 } } })]));
  assert.deepEqual(counts(d), none);
});

test('a forward_client route records no provider key', async () => {
  const u = await usageFor({ model: 'm', messages: [] }, { json: chatCompletion() }, '/passthrough/byo/x');
  assert.equal(u.provider_key_id, null);
  assert.equal(u.provider, null);
  assert.equal(u.passthrough_route_name, 'byo');
  assert.equal(u.prompt_tokens, 12);
});

test('the access log carries the token counts of a buffered response', async () => {
  mock.script({ json: chatCompletion({ usage: { prompt_tokens: 21, completion_tokens: 3 } }) });
  const res = await rawRequest(gw.proxyUrl, {
    method: 'POST', path: '/passthrough/vendor/v1/chat/completions', body: JSON.stringify({ model: 'gpt-4o', messages: [] }), headers: { authorization: `Bearer ${KEY}` },
  });
  const [line] = await waitForLines(gw, 'access', (l) => l.request_id === res.headers['x-tollgate-request-id']);
  assert.equal(line.prompt_tokens, 21);
  assert.equal(line.completion_tokens, 3);
  assert.equal(line.model, 'passthrough');
  assert.equal(line.upstream_model, 'gpt-4o');
});

test('the body\'s model is logged, never a metric label: upstream_model is "passthrough"', async () => {
  const model = 'caller-chosen-model-4f1c';
  mock.script({ json: chatCompletion() });
  await rawRequest(gw.proxyUrl, {
    method: 'POST', path: '/passthrough/vendor/v1/chat/completions', body: JSON.stringify({ model, messages: [] }), headers: { authorization: `Bearer ${KEY}` },
  });
  const metrics = await (await fetch(`${gw.metricsUrl}/metrics`)).text();
  assert.ok(!metrics.includes(model), 'the caller\'s text is no label value');
  assert.match(metrics, /tollgate_proxy_requests_total\{endpoint="\/passthrough_route",provider="vendor",model="passthrough",upstream_model="passthrough"/);
});
