// E2E: POST /v1/completions (spec 2 §4.1, §4.3 rules 4-5), the legacy endpoint code-completion
// tools use for fill-in-the-middle, with the official openai SDK as the caller: the body forwarded
// as sent with the upstream model (stream usage asked for), JSON and streamed answers with the
// caller's alias, usage taken from the stream, a stream that dies mid-way, an upstream that
// answers a stream request with JSON, request checks, 501 not_implemented for a target whose
// adapter has no completions endpoint, model groups, and the built-in mock provider.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import type { Gateway } from '../harness/spawn.ts';
import { useProxyFixture } from '../harness/proxy-fixture.ts';
import type { MockUpstream, RecordedRequest, Reply } from '../harness/mock-upstream.ts';
import { usageOf } from '../harness/echo-upstream.ts';
import { assertRefusedFields, postJson } from '../harness/post-json.ts';
import { waitForLines } from '../harness/log-lines.ts';

const CALLER_KEY = 'sk-e2e-completions-caller-5d2e';

let mock: MockUpstream;
let gw: Gateway;
let client: OpenAI;

useProxyFixture({
  config: { upstream: { timeout_ms: 5000, stream_timeout_ms: 1500, retries: 0 } },
  resources: (mockUrl) => ({
    _format_version: '1',
    provider_keys: [
      { display_name: 'up', provider: 'openai', api_key: 'sk-upstream-cmpl-secret', api_base: `${mockUrl}/v1` },
      { display_name: 'claude', provider: 'anthropic', api_key: 'sk-ant-cmpl', api_base: mockUrl },
      { display_name: 'local', provider: 'mock', api_key: 'x' },
      {
        display_name: 'shaped',
        provider: 'openai',
        api_key: 'sk-shaped',
        api_base: `${mockUrl}/v1`,
        request: { param_renames: { max_tokens: 'max_completion_tokens' }, default_body_fields: { response_format: { type: 'json_object' } }, default_headers: { 'x-team': 'ide' } },
      },
    ],
    models: [
      { display_name: 'coder', provider: 'openai', model_name: 'codestral-22b', provider_key: 'up' },
      { display_name: 'coder-a', provider: 'openai', model_name: 'coder-up-a', provider_key: 'up' },
      { display_name: 'coder-b', provider: 'openai', model_name: 'coder-up-b', provider_key: 'up' },
      { display_name: 'claude', provider: 'anthropic', model_name: 'claude-sonnet-4-5', provider_key: 'claude' },
      { display_name: 'coder-group', routing: { targets: [{ model: 'claude', priority: 10 }, { model: 'coder-a' }, { model: 'coder-b' }] } },
      { display_name: 'mock-coder', provider: 'mock', model_name: 'mock-coder-1', provider_key: 'local' },
      { display_name: 'shaped-coder', provider: 'openai', model_name: 'coder-shaped', provider_key: 'shaped' },
      { display_name: 'claude-only', routing: { targets: [{ model: 'claude' }] } },
    ],
    api_keys: [{ display_name: 'caller', key_env: 'E2E_CMPL_KEY', allowed_models: ['*'] }],
  }),
  env: { E2E_CMPL_KEY: CALLER_KEY },
  callerKey: CALLER_KEY,
  ready: (fx) => ({ mock, gw, client } = fx),
});

const USAGE = { prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 };

function completionJson(req: RecordedRequest, text = ' return a + b'): object {
  return { id: 'cmpl-1', object: 'text_completion', created: 1, model: req.json?.model, choices: [{ index: 0, text, logprobs: null, finish_reason: 'stop' }], usage: USAGE };
}

/** A completions stream as OpenAI sends it: text chunks, the finish chunk, the usage chunk when asked. */
function completionFrames(req: RecordedRequest, parts = [' return', ' a + b']): object[] {
  const base = { id: 'cmpl-1', object: 'text_completion', created: 1, model: req.json?.model };
  const frames: object[] = [
    ...parts.map((text) => ({ ...base, choices: [{ index: 0, text, logprobs: null, finish_reason: null }] })),
    { ...base, choices: [{ index: 0, text: '', logprobs: null, finish_reason: 'stop' }] },
  ];
  if (req.json?.stream_options?.include_usage === true) frames.push({ ...base, choices: [], usage: USAGE });
  return frames;
}

const completionReply = (req: RecordedRequest): Reply => (req.json?.stream === true ? { sse: completionFrames(req) } : { json: completionJson(req) });

const post = (body: unknown) => postJson(gw.proxyUrl, '/v1/completions', CALLER_KEY, body);

test('fill-in-the-middle: forwarded as sent with the upstream model, answered with the alias, usage recorded', async () => {
  mock.setFallback(completionReply);
  const { data, response } = await client.completions
    .create({ model: 'coder', prompt: 'def add(a, b):\n', suffix: '\n\nprint(add(1, 2))', max_tokens: 32, temperature: 0, stop: ['\n\n'] })
    .withResponse();
  assert.equal(data.model, 'coder');
  assert.equal(data.choices[0].text, ' return a + b');
  assert.deepEqual(data.usage, USAGE);
  assert.equal(mock.requests.length, 1);
  const sent = mock.requests[0];
  assert.equal(sent.url, '/v1/completions');
  assert.equal(sent.headers.authorization, 'Bearer sk-upstream-cmpl-secret');
  assert.deepEqual(sent.json, { model: 'codestral-22b', prompt: 'def add(a, b):\n', suffix: '\n\nprint(add(1, 2))', max_tokens: 32, temperature: 0, stop: ['\n\n'] });

  const row = await usageOf(gw, response.headers.get('x-tollgate-request-id'));
  assert.deepEqual([row.operation, row.requested_model, row.upstream_model, row.status, row.stream], ['completions', 'coder', 'codestral-22b', 200, false]);
  assert.deepEqual([row.prompt_tokens, row.completion_tokens, row.total_tokens], [9, 4, 13]);
});

test('a stream: every chunk carries the alias; usage is always asked for and charged, the usage chunk relayed only when the caller asked', async () => {
  mock.setFallback(completionReply);
  const stream = await client.completions.create({ model: 'coder', prompt: 'x', stream: true });
  let text = '';
  const models = new Set<string>();
  let usageChunks = 0;
  for await (const chunk of stream) {
    models.add(chunk.model);
    text += chunk.choices[0]?.text ?? '';
    if (chunk.usage) usageChunks++;
  }
  assert.equal(text, ' return a + b');
  assert.deepEqual([...models], ['coder']);
  assert.equal(usageChunks, 0, 'the caller did not ask for the usage chunk');
  assert.deepEqual(mock.requests[0].json.stream_options, { include_usage: true });
  const [row] = await waitForLines(gw, 'usage', (l) => l.operation === 'completions' && l.stream === true);
  assert.deepEqual([row.status, row.prompt_tokens, row.completion_tokens], [200, 9, 4]);

  mock.reset();
  mock.setFallback(completionReply);
  const asked = await client.completions.create({ model: 'coder', prompt: 'x', stream: true, stream_options: { include_usage: true } });
  let usage: unknown;
  for await (const chunk of asked) if (chunk.usage) usage = chunk.usage;
  assert.deepEqual(usage, USAGE);
});

test('a stream that dies mid-way ends with an error event and no [DONE], recorded 502', async () => {
  mock.setFallback((req) => ({ sse: completionFrames(req, ['a', 'b', 'c', 'd']), disconnectAfterEvents: 2 }));
  const res = await post({ model: 'coder', prompt: 'x', stream: true });
  assert.equal(res.status, 200);
  assert.match(res.text, /"text":"a"/);
  assert.match(res.text, /event: error\ndata: \{"error"/);
  assert.doesNotMatch(res.text, /\[DONE\]/);
  const row = await usageOf(gw, res.headers['x-tollgate-request-id'] as string);
  assert.equal(row.status, 502);
});

test('several choices (n: 2): a stream that ends without [DONE] is complete only when every choice finished', async () => {
  const frames = (req: RecordedRequest, finishBoth: boolean) => {
    const base = { id: 'cmpl-1', object: 'text_completion', created: 1, model: req.json?.model };
    const choice = (index: number, text: string, finish: string | null) => ({ index, text, logprobs: null, finish_reason: finish });
    return [
      { ...base, choices: [choice(0, 'zero', null)] },
      { ...base, choices: [choice(1, 'one', null)] },
      { ...base, choices: [choice(0, '', 'stop')] },
      ...(finishBoth ? [{ ...base, choices: [choice(1, '', 'length')] }] : []),
    ];
  };
  mock.setFallback((req) => ({ sse: frames(req, false), done: false }));
  const cut = await post({ model: 'coder', prompt: 'x', n: 2, stream: true });
  assert.equal(cut.status, 200);
  assert.match(cut.text, /event: error\ndata: \{"error"/, 'choice 1 never finished: the caller is told');
  assert.doesNotMatch(cut.text, /\[DONE\]/);
  assert.equal((await usageOf(gw, cut.headers['x-tollgate-request-id'] as string)).status, 502);

  mock.setFallback((req) => ({ sse: frames(req, true), done: false }));
  const whole = await post({ model: 'coder', prompt: 'x', n: 2, stream: true });
  assert.doesNotMatch(whole.text, /event: error/);
  assert.match(whole.text, /data: \[DONE\]\n\n$/, 'both finished: the end marker is added');
  assert.equal((await usageOf(gw, whole.headers['x-tollgate-request-id'] as string)).status, 200);
});

test('an upstream that answers a stream request with JSON: the caller still gets a stream', async () => {
  mock.setFallback((req) => ({ json: completionJson(req, 'whole') }));
  const stream = await client.completions.create({ model: 'coder', prompt: 'x', stream: true, stream_options: { include_usage: true } });
  let text = '';
  let finish: string | null = null;
  let usage: unknown;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.text ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
    if (chunk.usage) usage = chunk.usage;
    assert.equal(chunk.model, 'coder');
  }
  assert.deepEqual([text, finish, usage], ['whole', 'stop', USAGE]);
});

test('upstream errors keep their rules; a completion without choices is upstream_decode', async () => {
  mock.script({ status: 400, json: { error: { message: "This model's maximum context length is 8192 tokens.", type: 'invalid_request_error', param: 'prompt', code: 'context_length_exceeded' } } });
  await assert.rejects(client.completions.create({ model: 'coder', prompt: 'x' }), (e: any) => {
    assert.ok(e instanceof OpenAI.BadRequestError, String(e));
    assert.equal(e.code, 'context_length_exceeded');
    return true;
  });
  mock.script({ status: 500, body: 'boom' });
  assert.equal((await post({ model: 'coder', prompt: 'x' })).status, 502);
  mock.script({ json: { id: 'cmpl-1', object: 'text_completion', model: 'codestral-22b', choices: [] } });
  const empty = await post({ model: 'coder', prompt: 'x' });
  assert.equal(empty.status, 502);
  assert.equal(JSON.parse(empty.text).error.code, 'upstream_decode');
});

test("a provider key's body options (chat's) are not applied to completions; its header options are", async () => {
  mock.setFallback(completionReply);
  const res = await post({ model: 'shaped-coder', prompt: 'x', max_tokens: 8 });
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(mock.requests[0].json, { model: 'coder-shaped', prompt: 'x', max_tokens: 8 });
  assert.equal(mock.requests[0].headers['x-team'], 'ide');
});

test('request checks: 400 naming the field before any provider call', async () => {
  const cases: Array<[unknown, string]> = [
    [{ prompt: 'x' }, 'model'],
    [{ model: 'coder' }, 'prompt'],
    [{ model: 'coder', prompt: [] }, 'prompt'],
    [{ model: 'coder', prompt: [1, 'a'] }, 'prompt'],
    [{ model: 'coder', prompt: 'x', stream: 'yes' }, 'stream'],
    [{ model: 'coder', prompt: 'x', stream_options: [] }, 'stream_options'],
  ];
  await assertRefusedFields(post, cases);
  assert.equal(mock.requests.length, 0);
});

test('a target without a completions endpoint is a final 501; a group passes it over', async () => {
  mock.setFallback(completionReply);
  const refused = await post({ model: 'claude', prompt: 'x' });
  assert.equal(refused.status, 501, refused.text);
  assert.equal(refused.headers['x-should-retry'], 'false');
  assert.equal(JSON.parse(refused.text).error.message, "model 'claude' does not support /v1/completions: its provider (anthropic) has no completions endpoint in this gateway");
  const group = await post({ model: 'claude-only', prompt: 'x' });
  assert.equal(group.status, 501, group.text);
  assert.equal(JSON.parse(group.text).error.message, "model 'claude-only' does not support /v1/completions: none of its targets has a completions endpoint in this gateway");
  assert.equal(mock.requests.length, 0);

  // claude is the group's first tier: passed over; coder-a fails with a 503, coder-b serves.
  mock.setFallback((req) => (req.json?.model === 'coder-up-a' ? { status: 503, body: 'down' } : completionReply(req)));
  const { data, response } = await client.completions.create({ model: 'coder-group', prompt: 'x' }).withResponse();
  assert.equal(data.model, 'coder-group');
  assert.deepEqual(
    mock.requests.map((r) => r.json?.model),
    ['coder-up-a', 'coder-up-b'],
  );
  const id = response.headers.get('x-tollgate-request-id');
  const rows = await waitForLines(gw, 'usage', (l) => l.request_id === id, 2);
  assert.deepEqual(
    rows.map((r) => [r.operation, r.upstream_model, r.status, r.billable]),
    [
      ['completions', 'coder-up-a', 502, false],
      ['completions', 'coder-up-b', 200, true],
    ],
  );
});

test('the built-in mock provider answers completions, JSON and streamed', async () => {
  const r = await client.completions.create({ model: 'mock-coder', prompt: 'fn main() {' });
  assert.equal(r.model, 'mock-coder');
  assert.equal(r.choices[0].text, 'Mock completion from Tollgate. You said: fn main() {');
  assert.ok(r.usage!.total_tokens === r.usage!.prompt_tokens + r.usage!.completion_tokens);
  const s = await client.completions.create({ model: 'mock-coder', prompt: 'fn main() {', stream: true });
  let text = '';
  for await (const chunk of s) text += chunk.choices[0]?.text ?? '';
  assert.equal(text, r.choices[0].text);
  assert.equal(mock.requests.length, 0);
});
