// E2E: POST /v1/embeddings (spec 2 §4.1, §4.3 rules 4-5) with the official openai SDK as the
// caller: the body forwarded as sent with the upstream model, the answer with the caller's alias
// (base64 vectors decoded by the SDK), upstream errors, 501 not_implemented for a target whose
// adapter has no embeddings endpoint, request checks, model groups failing over with a zero-token
// row per failed attempt, the usage row, and the built-in mock provider.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import type { Gateway } from '../harness/spawn.ts';
import { useProxyFixture } from '../harness/proxy-fixture.ts';
import type { MockUpstream, RecordedRequest, Reply } from '../harness/mock-upstream.ts';
import { rawRequest, usageOf } from '../harness/echo-upstream.ts';
import { assertRefusedFields, postJson } from '../harness/post-json.ts';
import { waitForLines } from '../harness/log-lines.ts';

const CALLER_KEY = 'sk-e2e-embeddings-caller-41c7';
const LIMITED_KEY = 'sk-e2e-embeddings-limited-41c7';

let mock: MockUpstream;
let gw: Gateway;
let client: OpenAI;

useProxyFixture({
  config: { upstream: { timeout_ms: 5000, retries: 0 } },
  resources: (mockUrl) => ({
    _format_version: '1',
    provider_keys: [
      { display_name: 'up', provider: 'openai', api_key: 'sk-upstream-embed-secret', api_base: `${mockUrl}/v1` },
      { display_name: 'claude', provider: 'anthropic', api_key: 'sk-ant-embed', api_base: mockUrl },
      { display_name: 'local', provider: 'mock', api_key: 'x' },
      {
        display_name: 'shaped',
        provider: 'openai',
        api_key: 'sk-shaped',
        api_base: `${mockUrl}/v1`,
        request: { default_body_fields: { temperature: 0.2 }, param_renames: { input: 'texts' }, default_headers: { 'x-team': 'search' } },
      },
    ],
    models: [
      { display_name: 'embed', provider: 'openai', model_name: 'text-embedding-3-small', provider_key: 'up' },
      { display_name: 'embed-a', provider: 'openai', model_name: 'embed-up-a', provider_key: 'up' },
      { display_name: 'embed-b', provider: 'openai', model_name: 'embed-up-b', provider_key: 'up' },
      { display_name: 'embed-group', routing: { targets: [{ model: 'embed-a' }, { model: 'embed-b' }] } },
      { display_name: 'mixed-group', routing: { targets: [{ model: 'claude', priority: 10 }, { model: 'embed-a' }] } },
      { display_name: 'claude-group', routing: { targets: [{ model: 'claude' }] } },
      { display_name: 'tagged-group', routing: { targets: [{ model: 'claude', tags: ['cheap'] }, { model: 'embed-b', tags: ['default'] }] } },
      { display_name: 'claude', provider: 'anthropic', model_name: 'claude-sonnet-4-5', provider_key: 'claude' },
      // Asked by one test only: its rows are that test's alone.
      { display_name: 'claude-once', provider: 'anthropic', model_name: 'claude-sonnet-4-5', provider_key: 'claude' },
      { display_name: 'mock-embed', provider: 'mock', model_name: 'mock-embed-1', provider_key: 'local' },
      { display_name: 'shaped-embed', provider: 'openai', model_name: 'embed-shaped', provider_key: 'shaped' },
    ],
    api_keys: [
      { display_name: 'caller', key_env: 'E2E_EMBED_KEY', allowed_models: ['*'] },
      { display_name: 'limited', key_env: 'E2E_EMBED_LIMITED', allowed_models: ['claude'] },
    ],
  }),
  env: { E2E_EMBED_KEY: CALLER_KEY, E2E_EMBED_LIMITED: LIMITED_KEY },
  callerKey: CALLER_KEY,
  ready: (fx) => ({ mock, gw, client } = fx),
});

const VECTOR = [0.25, -0.5, 0.125, 1];

/** Float32 little-endian bytes in base64, as OpenAI sends `encoding_format: "base64"`. */
function base64Of(v: number[]): string {
  const b = Buffer.alloc(v.length * 4);
  v.forEach((x, i) => b.writeFloatLE(x, i * 4));
  return b.toString('base64');
}

/** An OpenAI embeddings answer for the request: one vector per input, in the format it asked for. */
function embeddingsReply(req: RecordedRequest, usage: object | null = { prompt_tokens: 7, total_tokens: 7 }): Reply {
  const inputs: unknown[] = Array.isArray(req.json?.input) && typeof req.json.input[0] !== 'number' ? req.json.input : [req.json?.input];
  return {
    json: {
      object: 'list',
      data: inputs.map((_, index) => ({ object: 'embedding', index, embedding: req.json?.encoding_format === 'base64' ? base64Of(VECTOR) : VECTOR })),
      model: req.json?.model,
      ...(usage === null ? {} : { usage }),
    },
  };
}

const post = (body: unknown, key = CALLER_KEY) => postJson(gw.proxyUrl, '/v1/embeddings', key, body);

test('the SDK default (base64): forwarded as sent with the upstream model, decoded by the SDK, the alias in the answer', async () => {
  mock.setFallback((req) => embeddingsReply(req));
  const { data, response } = await client.embeddings.create({ model: 'embed', input: ['alpha', 'beta'] }).withResponse();
  assert.equal(data.model, 'embed');
  assert.equal(data.data.length, 2);
  assert.deepEqual(data.data[1].embedding, VECTOR);
  assert.deepEqual(data.usage, { prompt_tokens: 7, total_tokens: 7 });
  assert.equal(mock.requests.length, 1);
  const sent = mock.requests[0];
  assert.equal(sent.url, '/v1/embeddings');
  assert.equal(sent.headers.authorization, 'Bearer sk-upstream-embed-secret');
  assert.deepEqual(sent.json, { model: 'text-embedding-3-small', input: ['alpha', 'beta'], encoding_format: 'base64' });
  assert.ok(response.headers.get('x-request-id'), 'the SDK reads its request id from x-request-id');

  const row = await usageOf(gw, response.headers.get('x-tollgate-request-id'));
  assert.equal(row.operation, 'embeddings');
  assert.equal(row.requested_model, 'embed');
  assert.equal(row.upstream_model, 'text-embedding-3-small');
  assert.equal(row.status, 200);
  assert.equal(row.stream, false);
  assert.deepEqual([row.prompt_tokens, row.completion_tokens, row.total_tokens], [7, null, 7]);
  assert.equal(row.billable, true);

  // Metrics: a model endpoint under its own label, its input tokens counted.
  const metrics = await (await fetch(`${gw.metricsUrl}/metrics`)).text();
  const series = (name: string) => metrics.split('\n').filter((l) => l.startsWith(`${name}{`) && l.includes('endpoint="/v1/embeddings"') && l.includes('model="embed"'));
  assert.deepEqual(series('tollgate_llm_requests_total').map((l) => l.includes('status="200"') && l.endsWith(' 1')), [true]);
  assert.deepEqual(series('tollgate_llm_input_tokens_total').map((l) => l.endsWith(' 7')), [true]);
});

test('fields the gateway does not check reach the upstream unchanged; float vectors and token-id input', async () => {
  mock.setFallback((req) => embeddingsReply(req));
  const extra = { model: 'embed', input: [[1, 2, 3], [4, 5]], encoding_format: 'float', dimensions: 4, user: 'u-1', input_type: 'query' };
  const res = await post(extra);
  assert.equal(res.status, 200, res.text);
  const body = JSON.parse(res.text);
  assert.equal(body.model, 'embed');
  assert.deepEqual(body.data[0].embedding, VECTOR);
  assert.deepEqual(mock.requests[0].json, { ...extra, model: 'text-embedding-3-small' });
});

test("a provider key's body options (for generation requests) are not applied; its header options are", async () => {
  mock.setFallback((req) => embeddingsReply(req));
  const res = await post({ model: 'shaped-embed', input: 'x' });
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(mock.requests[0].json, { model: 'embed-shaped', input: 'x' });
  assert.equal(mock.requests[0].headers['x-team'], 'search');
  assert.equal(mock.requests[0].headers.authorization, 'Bearer sk-shaped');
});

test('an answer without usage records no tokens (not zero)', async () => {
  mock.setFallback((req) => embeddingsReply(req, null));
  const res = await post({ model: 'embed', input: 'x' });
  assert.equal(res.status, 200, res.text);
  const row = await usageOf(gw, res.headers['x-tollgate-request-id'] as string);
  assert.deepEqual([row.prompt_tokens, row.total_tokens], [null, null]);
});

test('upstream errors: a 4xx keeps its status and words, a 5xx is a 502, an answer that is not JSON is upstream_decode', async () => {
  mock.script({ status: 400, json: { error: { message: 'This model does not support specifying dimensions.', type: 'invalid_request_error', param: 'dimensions', code: null } } });
  await assert.rejects(client.embeddings.create({ model: 'embed', input: 'x', dimensions: 3 }), (e: any) => {
    assert.ok(e instanceof OpenAI.BadRequestError, String(e));
    assert.equal(e.param, 'dimensions');
    assert.match(e.message, /does not support specifying dimensions/);
    return true;
  });
  mock.script({ status: 429, headers: { 'retry-after': '2' }, json: { error: { message: 'slow down', type: 'requests', code: 'rate_limit_exceeded' } } });
  const limited = await post({ model: 'embed', input: 'x' });
  assert.equal(limited.status, 429);
  assert.equal(limited.headers['retry-after'], '2');
  mock.script({ status: 503, body: 'overloaded' });
  const down = await post({ model: 'embed', input: 'x' });
  assert.equal(down.status, 502);
  assert.equal(JSON.parse(down.text).error.message, 'upstream returned 503 Service Unavailable');
  mock.script({ status: 200, headers: { 'content-type': 'application/json' }, body: '[1,2]' });
  const junk = await post({ model: 'embed', input: 'x' });
  assert.equal(junk.status, 502);
  assert.equal(JSON.parse(junk.text).error.code, 'upstream_decode');
});

test('a target whose adapter has no embeddings endpoint: 501 not_implemented, nothing sent upstream', async () => {
  await assert.rejects(client.embeddings.create({ model: 'claude', input: 'x' }), (e: any) => {
    assert.equal(e.status, 501);
    assert.equal(e.error.type, 'invalid_request_error');
    assert.equal(e.error.code, 'not_implemented');
    assert.match(e.message, /model 'claude' does not support \/v1\/embeddings: its provider \(anthropic\) has no embeddings endpoint/);
    return true;
  });
  assert.equal(mock.requests.length, 0);
  const res = await post({ model: 'claude', input: 'x' });
  // Final: the SDKs would otherwise retry a 5xx, refused alike each time.
  assert.equal(res.headers['x-should-retry'], 'false');
  const row = await usageOf(gw, res.headers['x-tollgate-request-id'] as string);
  // A gateway 501 is a zero-token row (spec 2 §6.1), classed by its code whether a model or a group refused.
  assert.deepEqual([row.operation, row.status, row.error_class, row.billable], ['embeddings', 501, 'not_implemented', false]);
  assert.deepEqual([row.prompt_tokens, row.completion_tokens, row.total_tokens], [0, 0, null]);
  assert.match(row.error_message, /does not support \/v1\/embeddings/);
});

test('request checks: 400 naming the field before any provider call; the key allowlist applies', async () => {
  const cases: Array<[unknown, string]> = [
    [{ input: 'x' }, 'model'],
    [{ model: 'embed' }, 'input'],
    [{ model: 'embed', input: [] }, 'input'],
    [{ model: 'embed', input: [1, 'a'] }, 'input'],
    [{ model: 'embed', input: 'x', encoding_format: 8 }, 'encoding_format'],
    [{ model: 'embed', input: 'x', stream: true }, 'stream'],
  ];
  await assertRefusedFields(post, cases);
  const forbidden = await post({ model: 'embed', input: 'x' }, LIMITED_KEY);
  assert.equal(forbidden.status, 403);
  assert.equal(JSON.parse(forbidden.text).error.message, "Access to model 'embed' is forbidden");
  const wrongMethod = await rawRequest(gw.proxyUrl, { method: 'GET', path: '/v1/embeddings', headers: { authorization: `Bearer ${CALLER_KEY}` } });
  assert.equal(wrongMethod.status, 405);
  assert.equal(wrongMethod.headers.allow, 'POST');
  assert.equal(mock.requests.length, 0);
});

test('a model group passes over its targets that cannot serve embeddings; with none left it is a 501', async () => {
  mock.setFallback((req) => embeddingsReply(req));
  const served = await post({ model: 'mixed-group', input: 'x' });
  assert.equal(served.status, 200, served.text);
  assert.equal(JSON.parse(served.text).model, 'mixed-group');
  assert.deepEqual(
    mock.requests.map((r) => r.json?.model),
    ['embed-up-a'],
  );
  const none = await post({ model: 'claude-group', input: 'x' });
  assert.equal(none.status, 501, none.text);
  assert.equal(none.headers['x-should-retry'], 'false');
  const noneRow = await usageOf(gw, none.headers['x-tollgate-request-id'] as string);
  assert.deepEqual([noneRow.error_class, noneRow.prompt_tokens, noneRow.completion_tokens], ['not_implemented', 0, 0]);
  assert.deepEqual(JSON.parse(none.text).error, {
    message: "model 'claude-group' does not support /v1/embeddings: none of its targets has an embeddings endpoint in this gateway",
    type: 'invalid_request_error',
    param: null,
    code: 'not_implemented',
  });
  assert.equal(mock.requests.length, 1);

  // Routing tags that select only targets without embeddings: the refusal says so.
  const tagged = await postJson(gw.proxyUrl, '/v1/embeddings', CALLER_KEY, { model: 'tagged-group', input: 'x' }, { 'x-tollgate-routing-tags': 'cheap' });
  assert.equal(tagged.status, 501, tagged.text);
  assert.equal(
    JSON.parse(tagged.text).error.message,
    "model 'tagged-group' does not support /v1/embeddings: none of its targets (of the targets the routing tags cheap select) has an embeddings endpoint in this gateway",
  );
  assert.equal((await post({ model: 'tagged-group', input: 'x' })).status, 200, 'without tags the default-tagged target serves');
});

test('a model group fails over to its next target; the failed attempt leaves its own zero-token row', async () => {
  mock.setFallback((req) => (req.json?.model === 'embed-up-a' ? { status: 503, body: 'down' } : embeddingsReply(req)));
  const { data, response } = await client.embeddings.create({ model: 'embed-group', input: 'x' }).withResponse();
  assert.equal(data.model, 'embed-group');
  assert.deepEqual(
    mock.requests.map((r) => r.json?.model),
    ['embed-up-a', 'embed-up-b'],
  );
  const id = response.headers.get('x-tollgate-request-id');
  const rows = await waitForLines(gw, 'usage', (l) => l.request_id === id, 2);
  assert.equal(rows.length, 2);
  const [failed, served] = rows;
  assert.deepEqual([failed.operation, failed.upstream_model, failed.status, failed.billable, failed.prompt_tokens], ['embeddings', 'embed-up-a', 502, false, 0]);
  assert.deepEqual([served.operation, served.upstream_model, served.status, served.prompt_tokens], ['embeddings', 'embed-up-b', 200, 7]);
});

test('an SDK with retries on makes one request for a 501', async () => {
  const retrying = new OpenAI({ apiKey: CALLER_KEY, baseURL: `${gw.proxyUrl}/v1`, maxRetries: 2 });
  await assert.rejects(retrying.embeddings.create({ model: 'claude-once', input: 'once' }), (e: any) => e.status === 501);
  // The SDK's first retry would come within about a second.
  await new Promise((r) => setTimeout(r, 1500));
  const rows = await waitForLines(gw, 'usage', (l) => l.requested_model === 'claude-once', 1);
  assert.equal(rows.length, 1, 'the SDK did not retry');
});

test('the built-in mock provider refuses, as a provider would, what it will not build', async () => {
  const wide = await post({ model: 'mock-embed', input: Array(100).fill('x'), dimensions: 3072 });
  assert.equal(wide.status, 400, wide.text);
  assert.equal(JSON.parse(wide.text).error.param, 'input');
  const dims = await post({ model: 'mock-embed', input: 'x', dimensions: 5000 });
  assert.equal(dims.status, 400);
  assert.equal(JSON.parse(dims.text).error.param, 'dimensions');
  const row = await usageOf(gw, dims.headers['x-tollgate-request-id'] as string);
  assert.deepEqual([row.status, row.prompt_tokens], [400, null]);
});

test('the built-in mock provider answers embeddings: one unit vector per input, equal inputs alike, base64 for the SDK', async () => {
  const a = await client.embeddings.create({ model: 'mock-embed', input: ['same', 'other', 'same'] });
  assert.equal(a.model, 'mock-embed');
  assert.equal(a.data.length, 3);
  const [v0, v1, v2] = a.data.map((d) => d.embedding);
  assert.equal(v0.length, 16);
  assert.deepEqual(v0, v2);
  assert.notDeepEqual(v0, v1);
  assert.ok(Math.abs(Math.hypot(...v0) - 1) < 1e-5, 'a unit vector');
  const f = await client.embeddings.create({ model: 'mock-embed', input: 'same', encoding_format: 'float', dimensions: 8 });
  assert.equal(f.data[0].embedding.length, 8);
  assert.ok(a.usage.prompt_tokens > 0 && a.usage.total_tokens === a.usage.prompt_tokens);
  assert.equal(mock.requests.length, 0);
});
