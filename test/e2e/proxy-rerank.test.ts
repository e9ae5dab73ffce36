// E2E: POST /v1/rerank (spec 2 §4.1, §4.3 rules 4-5, §6.1's zero-token rows): Cohere-style
// reranking through keys labelled openai, cohere or jina at their api_base, the body forwarded as
// sent, input tokens from whichever usage field the vendor reports (none for Cohere: a zero-token
// row), 501 not_implemented for other labels, model groups passing them over, request checks, and
// the built-in mock.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Gateway } from '../harness/spawn.ts';
import { useProxyFixture } from '../harness/proxy-fixture.ts';
import type { MockUpstream, RecordedRequest, Reply } from '../harness/mock-upstream.ts';
import { usageOf } from '../harness/echo-upstream.ts';
import { assertRefusedFields, postJson } from '../harness/post-json.ts';
import { waitForLines } from '../harness/log-lines.ts';

const CALLER_KEY = 'sk-e2e-rerank-caller-8a3f';

let mock: MockUpstream;
let gw: Gateway;

useProxyFixture({
  config: {
    upstream: { timeout_ms: 5000, retries: 0 },
    // docs/rerank.md's rule for Cohere's v2 SDK.
    proxy: { url_rewrites: [{ name: 'cohere-v2', match: '^/v2/rerank$', rewrite: '/v1/rerank' }] },
  },
  resources: (mockUrl) => ({
    _format_version: '1',
    provider_keys: [
      { display_name: 'cohere', provider: 'cohere', api_key: 'co-secret', api_base: `${mockUrl}/cohere/v2` },
      { display_name: 'jina', provider: 'jina', api_key: 'jina-secret', api_base: `${mockUrl}/jina/v1` },
      { display_name: 'vllm', provider: 'openai', api_key: 'vllm-secret', api_base: `${mockUrl}/vllm/v1` },
      { display_name: 'deepseek', provider: 'deepseek', api_key: 'ds-secret', api_base: `${mockUrl}/deepseek/v1` },
      { display_name: 'local', provider: 'mock', api_key: 'x' },
      // Unlabelled: what it may serve follows the models that use it.
      { display_name: 'plain', api_key: 'plain-secret', api_base: `${mockUrl}/plain/v1`, request: { default_headers: { 'x-team': 'search' }, default_body_fields: { temperature: 0.1 } } },
    ],
    models: [
      { display_name: 'co-rerank', provider: 'cohere', model_name: 'rerank-v3.5', provider_key: 'cohere' },
      { display_name: 'jina-rerank', provider: 'jina', model_name: 'jina-reranker-v2-base-multilingual', provider_key: 'jina' },
      { display_name: 'bge-rerank', provider: 'openai', model_name: 'BAAI/bge-reranker-v2-m3', provider_key: 'vllm' },
      { display_name: 'ds', provider: 'deepseek', model_name: 'deepseek-chat', provider_key: 'deepseek' },
      { display_name: 'rerank-group', routing: { targets: [{ model: 'ds', priority: 10 }, { model: 'co-rerank' }, { model: 'jina-rerank' }] } },
      { display_name: 'mock-rerank', provider: 'mock', model_name: 'mock-rerank-1', provider_key: 'local' },
      { display_name: 'plain-rerank', provider: 'jina', model_name: 'plain-reranker', provider_key: 'plain' },
      { display_name: 'plain-chat', provider: 'deepseek', model_name: 'plain-chat', provider_key: 'plain' },
    ],
    api_keys: [{ display_name: 'caller', key_env: 'E2E_RERANK_KEY', allowed_models: ['*'] }],
  }),
  env: { E2E_RERANK_KEY: CALLER_KEY },
  ready: (fx) => ({ mock, gw } = fx),
});

const DOCS = ['Carson City is the capital of Nevada.', 'Washington, D.C. is the capital of the United States.', 'Capital punishment exists in some states.'];

/** Each vendor's own answer shape: Cohere bills search units, Jina and vLLM report tokens. */
function vendorReply(req: RecordedRequest): Reply {
  const results = [{ index: 1, relevance_score: 0.98 }, { index: 0, relevance_score: 0.12 }];
  if (req.url.startsWith('/cohere/')) return { json: { id: 'r-1', results, meta: { api_version: { version: '2' }, billed_units: { search_units: 1 } } } };
  if (req.url.startsWith('/jina/')) return { json: { model: req.json?.model, results, usage: { total_tokens: 41 } } };
  return { json: { id: 'rerank-1', model: req.json?.model, results, usage: { prompt_tokens: 37, total_tokens: 37 } } };
}

const post = (body: unknown) => postJson(gw.proxyUrl, '/v1/rerank', CALLER_KEY, body);

const ASK = { query: 'What is the capital of the United States?', documents: DOCS, top_n: 2 };

test('each rerank vendor: <api_base>/rerank with its key, the body as sent, input tokens as reported (Cohere: a zero-token row)', async () => {
  mock.setFallback(vendorReply);
  const cases: Array<[string, string, string, string, number]> = [
    ['co-rerank', '/cohere/v2/rerank', 'Bearer co-secret', 'rerank-v3.5', 0],
    ['jina-rerank', '/jina/v1/rerank', 'Bearer jina-secret', 'jina-reranker-v2-base-multilingual', 41],
    ['bge-rerank', '/vllm/v1/rerank', 'Bearer vllm-secret', 'BAAI/bge-reranker-v2-m3', 37],
  ];
  for (const [alias, path, auth, upstream, tokens] of cases) {
    mock.reset();
    mock.setFallback(vendorReply);
    const res = await post({ model: alias, ...ASK, return_documents: false });
    assert.equal(res.status, 200, `${alias}: ${res.text}`);
    const body = JSON.parse(res.text);
    assert.deepEqual(body.results, [{ index: 1, relevance_score: 0.98 }, { index: 0, relevance_score: 0.12 }]);
    // The caller's alias where the answer names a model; Cohere's names none and gets none.
    assert.equal(body.model, alias === 'co-rerank' ? undefined : alias, alias);
    assert.equal(mock.requests.length, 1);
    assert.equal(mock.requests[0].url, path);
    assert.equal(mock.requests[0].headers.authorization, auth);
    assert.deepEqual(mock.requests[0].json, { model: upstream, ...ASK, return_documents: false });
    const row = await usageOf(gw, res.headers['x-tollgate-request-id'] as string);
    assert.deepEqual([row.operation, row.requested_model, row.upstream_model, row.status], ['rerank', alias, upstream, 200], alias);
    // total_tokens is the reported one, null when absent or 0 (spec 2 §6.1).
    assert.deepEqual([row.prompt_tokens, row.completion_tokens, row.total_tokens], [tokens, null, tokens === 0 ? null : tokens], alias);
    assert.equal(row.billable, true);
  }
});

test('a key of another label cannot rerank: a final 501, nothing sent; a group passes it over', async () => {
  mock.setFallback(vendorReply);
  const refused = await post({ model: 'ds', ...ASK });
  assert.equal(refused.status, 501, refused.text);
  assert.equal(refused.headers['x-should-retry'], 'false');
  assert.deepEqual(JSON.parse(refused.text).error, {
    message: "model 'ds' does not support /v1/rerank: its provider (deepseek) has no rerank endpoint in this gateway",
    type: 'invalid_request_error',
    param: null,
    code: 'not_implemented',
  });
  assert.equal(mock.requests.length, 0);
  const row = await usageOf(gw, refused.headers['x-tollgate-request-id'] as string);
  assert.deepEqual([row.operation, row.status, row.error_class, row.prompt_tokens], ['rerank', 501, 'not_implemented', 0]);

  // ds is the group's first tier, passed over; cohere fails with a 503, jina serves.
  mock.setFallback((req) => (req.url.startsWith('/cohere/') ? { status: 503, body: 'down' } : vendorReply(req)));
  const served = await post({ model: 'rerank-group', ...ASK });
  assert.equal(served.status, 200, served.text);
  assert.equal(JSON.parse(served.text).model, 'rerank-group');
  assert.deepEqual(
    mock.requests.map((r) => r.url),
    ['/cohere/v2/rerank', '/jina/v1/rerank'],
  );
  const id = served.headers['x-tollgate-request-id'];
  const rows = await waitForLines(gw, 'usage', (l) => l.request_id === id, 2);
  assert.deepEqual(
    rows.map((r) => [r.operation, r.upstream_model, r.status, r.billable]),
    [
      ['rerank', 'rerank-v3.5', 502, false],
      ['rerank', 'jina-reranker-v2-base-multilingual', 200, true],
    ],
  );
});

test("upstream errors keep their rules: a 4xx its status and words, in each vendor's shape; a 5xx a 502", async () => {
  mock.script({ status: 400, json: { error: { message: 'too many documents', type: 'invalid_request_error', param: 'documents', code: null } } });
  const bad = await post({ model: 'bge-rerank', ...ASK });
  assert.equal(bad.status, 400);
  assert.equal(JSON.parse(bad.text).error.message, 'too many documents');
  mock.script({ status: 400, json: { id: 'e-1', message: 'invalid request: top_n must be at most 1000' } });
  const cohere = await post({ model: 'co-rerank', ...ASK });
  assert.equal(cohere.status, 400);
  assert.equal(JSON.parse(cohere.text).error.message, 'invalid request: top_n must be at most 1000');
  mock.script({ status: 422, json: { detail: [{ loc: ['body', 'documents'], msg: 'field required', type: 'missing' }] } });
  const jina = await post({ model: 'jina-rerank', ...ASK });
  assert.equal(jina.status, 422);
  assert.equal(JSON.parse(jina.text).error.message, 'field required');
  mock.script({ status: 500, body: 'boom' });
  assert.equal((await post({ model: 'bge-rerank', ...ASK })).status, 502);
});

test("the model's provider label decides, not its key's; the key's header options apply, its body options do not", async () => {
  mock.setFallback(vendorReply);
  const res = await post({ model: 'plain-rerank', ...ASK });
  assert.equal(res.status, 200, res.text);
  assert.equal(mock.requests[0].url, '/plain/v1/rerank');
  assert.equal(mock.requests[0].headers['x-team'], 'search');
  assert.deepEqual(mock.requests[0].json, { model: 'plain-reranker', ...ASK });
  const refused = await post({ model: 'plain-chat', ...ASK });
  assert.equal(refused.status, 501);
  assert.match(JSON.parse(refused.text).error.message, /its provider \(deepseek\) has no rerank endpoint/);
  assert.equal(mock.requests.length, 1);
});

test("Cohere's v2 SDK path, /v2/rerank, with the documented url_rewrites rule", async () => {
  mock.setFallback(vendorReply);
  const res = await postJson(gw.proxyUrl, '/v2/rerank', CALLER_KEY, { model: 'co-rerank', ...ASK });
  assert.equal(res.status, 200, res.text);
  assert.equal(mock.requests[0].url, '/cohere/v2/rerank');
  const row = await usageOf(gw, res.headers['x-tollgate-request-id'] as string);
  assert.equal(row.operation, 'rerank');
});

test('request checks: 400 naming the field before any provider call', async () => {
  const cases: Array<[unknown, string]> = [
    [{ query: 'q', documents: DOCS }, 'model'],
    [{ model: 'co-rerank', documents: DOCS }, 'query'],
    [{ model: 'co-rerank', query: '', documents: DOCS }, 'query'],
    [{ model: 'co-rerank', query: 'q' }, 'documents'],
    [{ model: 'co-rerank', query: 'q', documents: [] }, 'documents'],
    [{ model: 'co-rerank', query: 'q', documents: ['a', 5] }, 'documents[1]'],
    [{ model: 'co-rerank', query: 'q', documents: DOCS, top_n: 0 }, 'top_n'],
    [{ model: 'co-rerank', query: 'q', documents: DOCS, stream: true }, 'stream'],
  ];
  await assertRefusedFields(post, cases);
  assert.equal(mock.requests.length, 0);
});

test('the built-in mock reranks by the query words a document holds, best first, top_n kept', async () => {
  const res = await post({ model: 'mock-rerank', query: 'capital of the United States', documents: [...DOCS, { text: 'Washington is the capital of the United States' }], top_n: 2 });
  assert.equal(res.status, 200, res.text);
  const body = JSON.parse(res.text);
  assert.equal(body.model, 'mock-rerank');
  assert.deepEqual(
    body.results.map((r: any) => r.index),
    [1, 3],
  );
  assert.ok(body.results[0].relevance_score >= body.results[1].relevance_score);
  const row = await usageOf(gw, res.headers['x-tollgate-request-id'] as string);
  assert.ok(row.prompt_tokens > 0);
  assert.equal(mock.requests.length, 0);
});
