// E2E: a provider key's request and response options on the AI endpoints (docs/resources.md,
// provider_keys): forwarded caller headers, default headers and their templates, default body
// fields, the temperature clamp, content flattening, the reasoning field, the stream end marker,
// and the key's TLS trust, through the official SDKs on /v1/chat/completions, /v1/messages and
// /v1/messages/count_tokens, native and translated.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import type { Gateway } from '../harness/spawn.ts';
import { useProxyFixture } from '../harness/proxy-fixture.ts';
import { chatChunks, chatCompletion, type MockUpstream } from '../harness/mock-upstream.ts';
import { replyFor } from '../harness/provider-wire.ts';
import { LOCALHOST_CERT, startTlsEcho, type TlsEcho } from '../harness/echo-upstream.ts';

const CALLER_KEY = 'sk-e2e-pkopts-caller-77d1';

let mock: MockUpstream;
let gw: Gateway;
let tls: TlsEcho;

before(async () => {
  tls = await startTlsEcho(0, (req) => chatCompletion({ model: JSON.parse(req.body).model }));
});
after(() => tls?.close());

const REQUEST_OPTIONS = {
  forward_client_headers: ['x-trace-*'],
  // `$$` leaves the gateway's own `${...}` templates to the gateway (the loader reads `${VAR}`).
  default_headers: { 'X-Org': 'acme', 'x-team': '$${request.api_key.team_id}', 'x-who': '$${request.api_key.name}@$${provider_key.name}', 'x-user': '$${request.api_key.user_id}' },
};

useProxyFixture({
  config: { upstream: { retries: 0 } },
  resources: (mockUrl) => {
    const https = `https://localhost:${tls.port}/v1`;
    return {
      _format_version: '1',
      provider_keys: [
        { display_name: 'up', provider: 'openai', api_key: 'sk-up', api_base: `${mockUrl}/v1`, request: { ...REQUEST_OPTIONS, default_body_fields: { user: 'gw' }, param_constraints: { temperature_max: 0.5 } } },
        { display_name: 'plain', provider: 'openai', api_key: 'sk-plain', api_base: `${mockUrl}/v1` },
        { display_name: 'flat', provider: 'vllm', api_key: 'sk-flat', api_base: `${mockUrl}/v1`, response: { content_list_to_string: true, reasoning_field: 'reasoning', stream_done_marker: 'required' } },
        { display_name: 'claude', provider: 'anthropic', api_key: 'sk-claude', api_base: mockUrl, request: { ...REQUEST_OPTIONS, default_body_fields: { metadata: { user_id: 'gw' } }, param_constraints: { temperature_max: 0.5 } } },
        { display_name: 'tls-trusting', provider: 'openai', api_key: 'sk-tls', api_base: https, tls: { ca_cert: LOCALHOST_CERT } },
        { display_name: 'tls-unverified', provider: 'openai', api_key: 'sk-tls', api_base: https, tls: { verify: false } },
        { display_name: 'tls-default', provider: 'openai', api_key: 'sk-tls', api_base: https },
      ],
      models: [
        { display_name: 'fast', provider: 'openai', model_name: 'gpt-4o-mini', provider_key: 'up' },
        { display_name: 'plain', provider: 'openai', model_name: 'gpt-4o-mini', provider_key: 'plain' },
        { display_name: 'flat', provider: 'vllm', model_name: 'qwen3', provider_key: 'flat' },
        { display_name: 'claude', provider: 'anthropic', model_name: 'claude-up', provider_key: 'claude' },
        { display_name: 'tls-trusting', provider: 'openai', model_name: 'gpt-4o-mini', provider_key: 'tls-trusting' },
        { display_name: 'tls-unverified', provider: 'openai', model_name: 'gpt-4o-mini', provider_key: 'tls-unverified' },
        { display_name: 'tls-default', provider: 'openai', model_name: 'gpt-4o-mini', provider_key: 'tls-default' },
      ],
      api_keys: [{ display_name: 'caller', key_env: 'E2E_PKOPTS_KEY', allowed_models: ['*'], team_id: 'team-7' }],
    };
  },
  env: { E2E_PKOPTS_KEY: CALLER_KEY },
  ready: (fx) => ({ mock, gw } = fx),
});

const TRACE = { 'x-trace-id': 'tr-1', 'x-trace-auth': `Bearer ${CALLER_KEY}`, 'x-other': 'not-listed' };
const openai = (headers: Record<string, string> = TRACE): OpenAI =>
  new OpenAI({ apiKey: CALLER_KEY, baseURL: `${gw.proxyUrl}/v1`, maxRetries: 0, defaultHeaders: headers });
const anthropic = (): Anthropic => new Anthropic({ apiKey: CALLER_KEY, baseURL: gw.proxyUrl, maxRetries: 0, defaultHeaders: TRACE });
const hi = [{ role: 'user' as const, content: 'hi' }];

/** The key's headers arrived; the caller's credentials and SDK headers did not. */
function assertKeyHeaders(headers: Record<string, unknown>, providerKey: string): void {
  assert.equal(headers['x-trace-id'], 'tr-1');
  assert.equal(headers['x-org'], 'acme');
  assert.equal(headers['x-team'], 'team-7');
  assert.equal(headers['x-who'], `caller@${providerKey}`);
  // The caller's key has no user_id: no header rather than an empty claim.
  assert.equal(headers['x-user'], undefined);
  assert.equal(headers['x-other'], undefined);
  // A header carrying the caller's gateway key is never relayed, whatever its name.
  assert.equal(headers['x-trace-auth'], undefined);
  assert.equal(JSON.stringify(headers).includes(CALLER_KEY), false);
  assert.ok(Object.keys(headers).every((h) => !h.startsWith('x-stainless-')));
}

test('chat completions: forwarded and default headers, default body fields and the clamp reach the upstream', async () => {
  const r = await openai().chat.completions.create({ model: 'fast', messages: hi, temperature: 1.5 });
  assert.equal(r.model, 'fast');
  const seen = mock.requests[0];
  assertKeyHeaders(seen.headers, 'up');
  assert.equal(seen.headers.authorization, 'Bearer sk-up');
  assert.equal(seen.json.user, 'gw');
  assert.equal(seen.json.temperature, 0.5);
  // The caller's own value wins over a default field.
  await openai().chat.completions.create({ model: 'fast', messages: hi, user: 'alice', temperature: 0.2 });
  assert.equal(mock.requests[1].json.user, 'alice');
  assert.equal(mock.requests[1].json.temperature, 0.2);
});

test('a key without options sends none of this', async () => {
  await openai().chat.completions.create({ model: 'plain', messages: hi, temperature: 1.5 });
  const seen = mock.requests[0];
  for (const h of ['x-trace-id', 'x-org', 'x-team', 'x-trace-auth']) assert.equal(seen.headers[h], undefined, h);
  assert.equal(seen.json.temperature, 1.5);
  assert.equal('user' in seen.json, false);
});

test('messages, native: the key options apply to the Anthropic upstream request', async () => {
  mock.setFallback(replyFor({ text: 'hello' }));
  // A variable: this SDK version's types no longer list `temperature`, the wire still takes it.
  const params = { model: 'claude', max_tokens: 50, messages: hi, temperature: 0.9 };
  const r = await anthropic().messages.create(params);
  assert.equal(r.content[0].type, 'text');
  const seen = mock.requests[0];
  assert.equal(seen.url, '/v1/messages');
  assertKeyHeaders(seen.headers, 'claude');
  assert.equal(seen.headers['x-api-key'], 'sk-claude');
  assert.equal(seen.json.temperature, 0.5);
  assert.deepEqual(seen.json.metadata, { user_id: 'gw' });
});

test('messages, translated to an OpenAI-family key: the key options apply to the translated request', async () => {
  mock.setFallback(replyFor({ text: 'hello' }));
  const params = { model: 'fast', max_tokens: 50, messages: hi, temperature: 0.9 };
  await anthropic().messages.create(params);
  const seen = mock.requests[0];
  assert.equal(seen.url, '/v1/chat/completions');
  assertKeyHeaders(seen.headers, 'up');
  assert.equal(seen.json.temperature, 0.5);
  assert.equal(seen.json.user, 'gw');
});

test('count_tokens: headers apply, body options do not (a token count has none of their fields)', async () => {
  mock.setFallback({ json: { input_tokens: 9 } });
  const r = await anthropic().messages.countTokens({ model: 'claude', messages: hi });
  assert.equal(r.input_tokens, 9);
  const seen = mock.requests[0];
  assert.equal(seen.url, '/v1/messages/count_tokens');
  assertKeyHeaders(seen.headers, 'claude');
  assert.equal('metadata' in seen.json, false);
});

test('content_list_to_string: text-only content lists reach the upstream as strings', async () => {
  await openai({}).chat.completions.create({
    model: 'flat',
    messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello, ' }, { type: 'text', text: 'world' }] }],
  });
  assert.equal(mock.requests[0].json.messages[0].content, 'Hello, world');
});

test('reasoning_field: the vendor field is read as the reasoning, JSON and stream, native and translated', async () => {
  const withReasoning = (): object => {
    const c = chatCompletion({ model: 'qwen3', content: 'four' }) as any;
    c.choices[0].message.reasoning = 'two plus two';
    return c;
  };
  mock.setFallback(() => ({ json: withReasoning() }));
  const r = await openai({}).chat.completions.create({ model: 'flat', messages: hi });
  assert.equal((r.choices[0].message as any).reasoning_content, 'two plus two');
  const m = await anthropic().messages.create({ model: 'flat', max_tokens: 50, messages: hi });
  assert.deepEqual(m.content.map((b) => b.type), ['thinking', 'text']);
  assert.equal((m.content[0] as Anthropic.ThinkingBlock).thinking, 'two plus two');

  const frames = chatChunks({ model: 'qwen3', parts: ['four'], usage: { prompt_tokens: 3, completion_tokens: 1 } }) as any[];
  frames.splice(1, 0, { ...frames[1], choices: [{ index: 0, delta: { reasoning: 'two plus two' }, logprobs: null, finish_reason: null }] });
  mock.setFallback({ sse: frames });
  let reasoning = '';
  for await (const chunk of await openai({}).chat.completions.create({ model: 'flat', messages: hi, stream: true })) {
    reasoning += (chunk.choices[0]?.delta as any)?.reasoning_content ?? '';
  }
  assert.equal(reasoning, 'two plus two');
  let thinking = '';
  for await (const event of await anthropic().messages.create({ model: 'flat', max_tokens: 50, messages: hi, stream: true })) {
    if (event.type === 'content_block_delta' && event.delta.type === 'thinking_delta') thinking += event.delta.thinking;
  }
  assert.equal(thinking, 'two plus two');
});

test('stream_done_marker required: a stream that ends without [DONE] is cut short, not completed', async () => {
  const frames = chatChunks({ model: 'qwen3', usage: { prompt_tokens: 3, completion_tokens: 3 } });
  mock.setFallback({ sse: frames, done: false });
  // Without the option a finished stream ending at the connection's end is complete.
  let text = '';
  for await (const chunk of await openai({}).chat.completions.create({ model: 'plain', messages: hi, stream: true })) text += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(text, 'Hello from the mock upstream.');
  await assert.rejects(async () => {
    for await (const _ of await openai({}).chat.completions.create({ model: 'flat', messages: hi, stream: true })) { /* read */ }
  }, /before the response was complete/);
  await assert.rejects(async () => {
    for await (const _ of await anthropic().messages.create({ model: 'flat', max_tokens: 50, messages: hi, stream: true })) { /* read */ }
  }, /before the response was complete/);
  // With [DONE] the same key's stream completes.
  mock.setFallback({ sse: frames });
  text = '';
  for await (const chunk of await openai({}).chat.completions.create({ model: 'flat', messages: hi, stream: true })) text += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(text, 'Hello from the mock upstream.');
});

test("tls: the key's ca_cert or verify: false reaches a self-signed upstream; default trust refuses it", async () => {
  tls.requests.length = 0;
  for (const model of ['tls-trusting', 'tls-unverified']) {
    const r = await openai({}).chat.completions.create({ model, messages: hi });
    assert.equal(r.model, model);
  }
  assert.equal(tls.requests.length, 2);
  assert.equal(tls.requests[0].headers.authorization, 'Bearer sk-tls');
  await assert.rejects(openai({}).chat.completions.create({ model: 'tls-default', messages: hi }), (err: any) => {
    assert.equal(err.status, 502);
    return true;
  });
  assert.equal(tls.requests.length, 2);
});
