// E2E: POST /v1/chat/completions on the native OpenAI path (spec 2 §4.2): alias resolution,
// the caller's alias in responses and in every stream chunk, JSON and SSE through the official
// SDK, usage chunks, role validation, developer-message delivery and max_tokens renaming.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import type { Gateway } from '../harness/spawn.ts';
import { useProxyFixture } from '../harness/proxy-fixture.ts';
import { chatChunks, chatCompletion, type MockUpstream } from '../harness/mock-upstream.ts';

const CALLER_KEY = 'sk-e2e-chat-caller-41a7';

let mock: MockUpstream;
let gw: Gateway;
let client: OpenAI;

useProxyFixture({
  resources: (mockUrl) => ({
    _format_version: '1',
    provider_keys: [
      { display_name: 'up', provider: 'openai', api_key: 'sk-upstream-secret', api_base: `${mockUrl}/v1` },
      // An OpenAI-compatible vendor: same adapter, other provider label.
      { display_name: 'groq', provider: 'groq', api_key: 'sk-groq-secret', api_base: `${mockUrl}/openai/v1` },
    ],
    models: [
      { display_name: 'fast', provider: 'openai', model_name: 'gpt-4o-mini', provider_key: 'up' },
      { display_name: 'gpt-4o', provider: 'openai', model_name: 'gpt-4o', provider_key: 'up' },
      { display_name: 'reasoner', provider: 'openai', model_name: 'o3-mini', provider_key: 'up' },
      // The general wildcard comes first in the file: specificity, not order, must pick.
      { display_name: 'openai/*', provider: 'openai', model_name: '*', provider_key: 'up' },
      { display_name: 'openai/gpt-4*', provider: 'openai', model_name: 'tuned-gpt-4*', provider_key: 'up' },
      { display_name: 'llama', provider: 'groq', model_name: 'llama-3.3-70b-versatile', provider_key: 'groq' },
    ],
    api_keys: [{ display_name: 'caller', key_env: 'E2E_CHAT_KEY', allowed_models: ['*'] }],
  }),
  env: { E2E_CHAT_KEY: CALLER_KEY },
  callerKey: CALLER_KEY,
  ready: (fx) => ({ mock, gw, client } = fx),
});

const hi = [{ role: 'user' as const, content: 'hi' }];

function postChat(body: unknown): Promise<Response> {
  return fetch(`${gw.proxyUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${CALLER_KEY}` },
    body: JSON.stringify(body),
  });
}

/** The JSON payloads of a raw SSE body's data lines, `[DONE]` excluded. */
function dataPayloads(sse: string): any[] {
  return sse
    .split('\n')
    .filter((l) => l.startsWith('data:') && l.slice(5).trim() !== '[DONE]')
    .map((l) => JSON.parse(l.slice(5)));
}

// ---- aliases ----

test('an exact alias sends its model_name upstream and answers with the alias', async () => {
  mock.script({ json: chatCompletion({ model: 'gpt-4o-mini-2024-07-18' }) });
  const out = await client.chat.completions.create({ model: 'fast', messages: hi });
  assert.equal(mock.requests[0].json.model, 'gpt-4o-mini');
  assert.equal(mock.requests[0].url, '/v1/chat/completions');
  assert.equal(out.model, 'fast');
});

test('a wildcard alias substitutes the captured text into model_name', async () => {
  mock.script({ json: chatCompletion({ model: 'gpt-3.5-turbo-0125' }) });
  const out = await client.chat.completions.create({ model: 'openai/gpt-3.5-turbo', messages: hi });
  assert.equal(mock.requests[0].json.model, 'gpt-3.5-turbo');
  assert.equal(out.model, 'openai/gpt-3.5-turbo');
});

test('the most specific wildcard alias wins, whatever the file order', async () => {
  const out = await client.chat.completions.create({ model: 'openai/gpt-4o', messages: hi });
  assert.equal(mock.requests[0].json.model, 'tuned-gpt-4o');
  assert.equal(out.model, 'openai/gpt-4o');
});

test("the captured part goes into model_name as is: '$' patterns in it are not replacement patterns", async () => {
  await client.chat.completions.create({ model: "openai/gpt-4$&-$'-$$", messages: hi });
  assert.equal(mock.requests[0].json.model, "tuned-gpt-4$&-$'-$$");
});

test('every stream chunk carries the caller alias, never the upstream model', async () => {
  mock.script({ sse: chatChunks({ model: 'tuned-gpt-4o-2024-08-06', usage: { prompt_tokens: 3, completion_tokens: 4 } }) });
  const res = await postChat({ model: 'openai/gpt-4o', messages: hi, stream: true, stream_options: { include_usage: true } });
  assert.equal(res.status, 200);
  const text = await res.text();
  assert.ok(!text.includes('tuned-gpt-4o'), text);
  const payloads = dataPayloads(text);
  assert.equal(payloads.length, 6); // role, 3 parts, finish, usage
  for (const p of payloads) assert.equal(p.model, 'openai/gpt-4o');
  assert.ok(text.trimEnd().endsWith('data: [DONE]'));
});

// ---- JSON through the SDK ----

test('a JSON completion through the SDK: content and usage come back unchanged', async () => {
  mock.script({ json: chatCompletion({ content: 'Paris is the capital.', usage: { prompt_tokens: 21, completion_tokens: 5 } }) });
  const out = await client.chat.completions.create({ model: 'fast', messages: [{ role: 'user', content: 'Capital of France?' }], temperature: 0.2 });
  assert.equal(out.object, 'chat.completion');
  assert.equal(out.choices[0].message.content, 'Paris is the capital.');
  assert.equal(out.choices[0].finish_reason, 'stop');
  assert.equal(out.usage?.prompt_tokens, 21);
  assert.equal(out.usage?.completion_tokens, 5);
  assert.equal(out.usage?.total_tokens, 26);
  assert.equal(mock.requests[0].json.temperature, 0.2);
  assert.deepEqual(mock.requests[0].json.messages, [{ role: 'user', content: 'Capital of France?' }]);
});

test('tool calls round-trip: tools go up, tool_calls come back, tool results go up unchanged', async () => {
  const tools = [
    {
      type: 'function' as const,
      function: {
        name: 'get_weather',
        description: 'Weather for a city',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    },
  ];
  const call = { id: 'call_e2e_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } };
  mock.script({ json: chatCompletion({ tool_calls: [call] }) });
  const first = await client.chat.completions.create({
    model: 'fast',
    messages: [{ role: 'user', content: 'Weather in Oslo?' }],
    tools,
    tool_choice: 'auto',
  });
  assert.deepEqual(mock.requests[0].json.tools, tools);
  assert.equal(mock.requests[0].json.tool_choice, 'auto');
  const msg = first.choices[0].message;
  assert.equal(first.choices[0].finish_reason, 'tool_calls');
  assert.equal(msg.content, null);
  assert.deepEqual(msg.tool_calls, [call]);

  const followUp = [
    { role: 'user' as const, content: 'Weather in Oslo?' },
    { role: 'assistant' as const, content: null, tool_calls: [call as any] },
    { role: 'tool' as const, tool_call_id: 'call_e2e_1', content: '{"temp_c":4}' },
  ];
  mock.script({ json: chatCompletion({ content: 'It is 4 °C in Oslo.' }) });
  const second = await client.chat.completions.create({ model: 'fast', messages: followUp, tools });
  assert.deepEqual(mock.requests[1].json.messages, followUp);
  assert.equal(second.choices[0].message.content, 'It is 4 °C in Oslo.');
});

test('multimodal content arrays reach the upstream unchanged', async () => {
  const messages = [
    {
      role: 'user' as const,
      content: [
        { type: 'text' as const, text: 'What is in this picture?' },
        { type: 'image_url' as const, image_url: { url: 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', detail: 'low' as const } },
        { type: 'image_url' as const, image_url: { url: 'https://example.com/cat.jpg' } },
      ],
    },
  ];
  await client.chat.completions.create({ model: 'gpt-4o', messages });
  assert.deepEqual(mock.requests[0].json.messages, messages);
});

// ---- streaming through the SDK ----

test('a stream through the SDK without include_usage: content arrives, no usage-only chunk', async () => {
  mock.script({ sse: chatChunks({ parts: ['Once', ' upon', ' a time'], usage: { prompt_tokens: 9, completion_tokens: 3 } }) });
  const stream = await client.chat.completions.create({ model: 'fast', messages: hi, stream: true });
  let text = '';
  const chunks: any[] = [];
  for await (const chunk of stream) {
    chunks.push(chunk);
    text += chunk.choices[0]?.delta?.content ?? '';
  }
  assert.equal(text, 'Once upon a time');
  assert.equal(chunks.at(-1).choices[0].finish_reason, 'stop');
  assert.ok(chunks.every((c) => c.choices.length === 1), 'no usage-only chunk');
  assert.ok(chunks.every((c) => c.usage === undefined || c.usage === null), 'no usage numbers');
  assert.ok(chunks.every((c) => c.model === 'fast'));
  // The gateway asks for usage on the caller's behalf, to count tokens.
  assert.equal(mock.requests[0].json.stream, true);
  assert.equal(mock.requests[0].json.stream_options?.include_usage, true);
});

test('a stream with include_usage: false is still counted: usage is asked for upstream and not relayed', async () => {
  mock.script({ sse: chatChunks({ parts: ['ok'], usage: { prompt_tokens: 9, completion_tokens: 1 } }) });
  const stream = await client.chat.completions.create({ model: 'fast', messages: hi, stream: true, stream_options: { include_usage: false } });
  const chunks: any[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  assert.ok(chunks.every((c) => c.choices.length === 1 && (c.usage === undefined || c.usage === null)), 'no usage reaches the caller');
  assert.deepEqual(mock.requests[0].json.stream_options, { include_usage: true });
});

test('a stream through the SDK with include_usage: the final usage chunk arrives', async () => {
  mock.script({ sse: chatChunks({ parts: ['ok'], usage: { prompt_tokens: 9, completion_tokens: 1 } }) });
  const stream = await client.chat.completions.create({ model: 'fast', messages: hi, stream: true, stream_options: { include_usage: true } });
  const chunks: any[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  const last = chunks.at(-1);
  assert.deepEqual(last.choices, []);
  assert.equal(last.usage.prompt_tokens, 9);
  assert.equal(last.usage.completion_tokens, 1);
  assert.equal(last.usage.total_tokens, 10);
  assert.equal(last.model, 'fast');
  assert.deepEqual(mock.requests[0].json.stream_options, { include_usage: true });
});

// ---- roles ----

for (const role of ['User', 'SYSTEM', 'function']) {
  test(`role "${role}" is refused with 400 naming messages[1].role, before any upstream call`, async () => {
    const messages = [
      { role: 'system', content: 'be brief' },
      { role, content: 'hi', ...(role === 'function' ? { name: 'f' } : {}) },
    ];
    const res = await postChat({ model: 'fast', messages });
    const body = (await res.json()) as any;
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(body.error.type, 'invalid_request_error');
    assert.equal(body.error.param, 'messages[1].role');
    assert.equal(body.error.code, 'invalid_value');
    assert.match(body.error.message, /messages\[1\]\.role/);
    await assert.rejects(client.chat.completions.create({ model: 'fast', messages: messages as any }), (e: any) => {
      assert.ok(e instanceof OpenAI.BadRequestError, String(e));
      assert.equal(e.param, 'messages[1].role');
      return true;
    });
    assert.equal(mock.requests.length, 0);
  });
}

test('a developer message reaches a provider "openai" key unchanged', async () => {
  const messages = [
    { role: 'system' as const, content: 'You are terse.' },
    { role: 'user' as const, content: 'hi' },
    { role: 'developer' as const, content: 'Answer in French.' },
  ];
  await client.chat.completions.create({ model: 'fast', messages });
  assert.deepEqual(mock.requests[0].json.messages, messages);
});

test('a developer message reaches another OpenAI-compatible provider as a system message in the same position', async () => {
  const messages = [
    { role: 'user' as const, content: 'hi' },
    { role: 'developer' as const, content: 'Answer in French.' },
    { role: 'assistant' as const, content: 'Bonjour.' },
    { role: 'user' as const, content: 'Again?' },
  ];
  const out = await client.chat.completions.create({ model: 'llama', messages });
  const up = mock.requests[0];
  assert.equal(up.url, '/openai/v1/chat/completions');
  assert.equal(up.headers.authorization, 'Bearer sk-groq-secret');
  assert.equal(up.json.model, 'llama-3.3-70b-versatile');
  assert.deepEqual(up.json.messages, [
    { role: 'user', content: 'hi' },
    { role: 'system', content: 'Answer in French.' },
    { role: 'assistant', content: 'Bonjour.' },
    { role: 'user', content: 'Again?' },
  ]);
  assert.equal(out.model, 'llama');
});

// ---- max_tokens ----

test('max_tokens is sent as max_completion_tokens to an OpenAI reasoning model', async () => {
  await client.chat.completions.create({ model: 'reasoner', messages: hi, max_tokens: 50 });
  const up = mock.requests[0].json;
  assert.equal(up.model, 'o3-mini');
  assert.equal(up.max_completion_tokens, 50);
  assert.equal('max_tokens' in up, false);
});

test('max_tokens is unchanged for gpt-4o', async () => {
  await client.chat.completions.create({ model: 'gpt-4o', messages: hi, max_tokens: 50 });
  const up = mock.requests[0].json;
  assert.equal(up.model, 'gpt-4o');
  assert.equal(up.max_tokens, 50);
  assert.equal('max_completion_tokens' in up, false);
});

test('a body nested thousands of levels deep is 400, not a 500, and nothing goes upstream', async () => {
  const deep = `${'['.repeat(20_000)}${']'.repeat(20_000)}`;
  const res = await fetch(`${gw.proxyUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${CALLER_KEY}` },
    body: `{"model":"fast","messages":[{"role":"user","content":"hi"}],"metadata":{"x":${deep}}}`,
  });
  const text = await res.text();
  assert.equal(res.status, 400, text);
  assert.deepEqual(JSON.parse(text).error, { message: 'the request JSON is nested too deeply', type: 'invalid_request_error', param: null, code: null });
  assert.equal(mock.requests.length, 0);
});
