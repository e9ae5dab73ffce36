// E2E: the official SDKs through pass-through routes, where a provider-native call is natural
// (spec 3 §4.1): OpenAI files and a native chat stream, Anthropic messages (JSON and stream)
// with the messages-family credential injected.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import type { Gateway } from '../harness/spawn.ts';
import { useProxyFixture } from '../harness/proxy-fixture.ts';
import type { MockUpstream } from '../harness/mock-upstream.ts';
import { usageOf } from '../harness/echo-upstream.ts';
import { anthropicFrames, anthropicJson, openAIFrames } from '../harness/provider-wire.ts';

const KEY = 'sk-pt-sdk-caller';
const OPENAI_SECRET = 'sk-openai-upstream';
const ANTHROPIC_SECRET = 'sk-ant-upstream';
let mock: MockUpstream;
let gw: Gateway;

useProxyFixture({
  resources: (m) => ({
    _format_version: '1',
    provider_keys: [
      { display_name: 'openai', provider: 'openai', api_key: OPENAI_SECRET },
      { display_name: 'anthropic', provider: 'anthropic', api_key: ANTHROPIC_SECRET },
    ],
    api_keys: [{ display_name: 'dev', key_env: 'PT_KEY', allowed_models: [], allowed_routes: ['openai-native', 'anthropic-native'] }],
    passthrough_routes: [
      { name: 'openai-native', path_prefix: '/passthrough/openai', target_url: `${m}/v1`, provider_key: 'openai' },
      { name: 'anthropic-native', path_prefix: '/passthrough/anthropic', target_url: m, provider_key: 'anthropic' },
    ],
  }),
  env: { PT_KEY: KEY },
  ready: (fx) => ({ mock, gw } = fx),
});

/** The gateway request id of the SDK's last response. */
let lastRequestId: string | null = null;
const recordingFetch: typeof fetch = async (input, init) => {
  const res = await fetch(input, init);
  lastRequestId = res.headers.get('x-tollgate-request-id');
  return res;
};
const openai = () => new OpenAI({ apiKey: KEY, baseURL: `${gw.proxyUrl}/passthrough/openai/v1`, maxRetries: 0, fetch: recordingFetch });
const anthropic = () => new Anthropic({ apiKey: KEY, baseURL: `${gw.proxyUrl}/passthrough/anthropic`, maxRetries: 0, fetch: recordingFetch });

/** Run one SDK call and return the usage line of its request. */
async function usageAfter(call: () => Promise<unknown>): Promise<any> {
  lastRequestId = null;
  await call();
  return usageOf(gw, lastRequestId);
}

test('OpenAI SDK: client.files.list() through a route', async () => {
  mock.script({
    json: { object: 'list', data: [{ id: 'file-abc', object: 'file', bytes: 120, created_at: 1_700_000_000, filename: 'batch.jsonl', purpose: 'batch', status: 'processed' }], has_more: false },
  });
  const ids: string[] = [];
  for await (const f of openai().files.list()) ids.push(f.id);
  assert.deepEqual(ids, ['file-abc']);
  const up = mock.requests[0];
  assert.equal(up.method, 'GET');
  assert.equal(up.url, '/v1/files');
  assert.equal(up.headers.authorization, `Bearer ${OPENAI_SECRET}`);
  assert.ok(!JSON.stringify(up.headers).includes(KEY));
});

test('OpenAI SDK: a native chat stream is relayed and its usage recorded', async () => {
  mock.script({ sse: openAIFrames({ text: 'Hello from upstream', usage: { input: 9, output: 4 } }, 'gpt-4o-mini') });
  let text = '';
  const u = await usageAfter(async () => {
    const stream = await openai().chat.completions.create({
      model: 'gpt-4o-mini', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }],
    });
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
  });
  assert.equal(text, 'Hello from upstream');
  assert.equal(mock.requests[0].url, '/v1/chat/completions');
  assert.equal(mock.requests[0].json.model, 'gpt-4o-mini', 'the model id is not rewritten');
  assert.equal(u.passthrough_route_name, 'openai-native');
  assert.equal(u.requested_model, 'gpt-4o-mini');
  assert.equal(u.prompt_tokens, 9);
  assert.equal(u.completion_tokens, 4);
});

test('OpenAI SDK: an upstream error reaches the SDK as the upstream wrote it', async () => {
  mock.script({ status: 404, json: { error: { message: 'No such File object: file-x', type: 'invalid_request_error', param: 'id', code: null } } });
  await assert.rejects(openai().files.retrieve('file-x'), (err: any) => {
    assert.equal(err.status, 404);
    assert.equal(err.message, '404 No such File object: file-x');
    return true;
  });
});

test('Anthropic SDK: messages.create with the provider key injected as x-api-key', async () => {
  mock.script({ json: anthropicJson({ text: 'Bonjour', usage: { input: 12, output: 3, cacheRead: 4 } }, 'claude-sonnet-4-5') });
  let msg: Anthropic.Message | undefined;
  const u = await usageAfter(async () => {
    msg = await anthropic().messages.create({ model: 'claude-sonnet-4-5', max_tokens: 32, messages: [{ role: 'user', content: 'hi' }] });
  });
  assert.equal(msg!.content[0].type === 'text' ? msg!.content[0].text : '', 'Bonjour');
  const up = mock.requests[0];
  assert.equal(up.url, '/v1/messages');
  assert.equal(up.headers['x-api-key'], ANTHROPIC_SECRET);
  assert.equal(up.headers['anthropic-version'], '2023-06-01');
  assert.equal(up.headers.authorization, undefined);
  assert.equal(u.requested_model, 'claude-sonnet-4-5');
  assert.equal(u.prompt_tokens, 12);
  assert.equal(u.completion_tokens, 3);
  assert.equal(u.cached_tokens, 4);
});

test('Anthropic SDK: a streamed message with usage from message_start and message_delta', async () => {
  mock.script({ sse: anthropicFrames({ text: 'streamed words', usage: { input: 30, output: 8 } }, 'claude-sonnet-4-5'), done: false });
  let final: Anthropic.Message | undefined;
  const u = await usageAfter(async () => {
    final = await anthropic().messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 32, messages: [{ role: 'user', content: 'hi' }] }).finalMessage();
  });
  assert.equal(final!.content[0].type === 'text' ? final!.content[0].text : '', 'streamed words');
  assert.equal(u.stream, true);
  assert.equal(u.prompt_tokens, 30);
  assert.equal(u.completion_tokens, 8);
  assert.equal(u.status, 200);
});

test('an unknown caller key answers 401 through the SDK', async () => {
  const other = new OpenAI({ apiKey: 'sk-unknown', baseURL: `${gw.proxyUrl}/passthrough/openai/v1`, maxRetries: 0 });
  await assert.rejects(other.files.list(), (err: any) => {
    assert.equal(err.status, 401);
    assert.equal(err.code, 'invalid_api_key');
    return true;
  });
});
