import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GatewayError } from '../../../lib/errors.ts';
import type { AdapterTarget, ProviderKeyView } from '../contract.ts';
import { encodeAnthropicRequest, parseDataUrl, thinkingBudget, THINKING_BUDGETS } from './encode.ts';
import { anthropicAdapter } from './index.ts';

const key = (over: Partial<ProviderKeyView> = {}): ProviderKeyView => ({
  provider: 'anthropic', apiKey: 'sk-ant-test', apiBase: undefined, ...over,
});
const target: AdapterTarget = { key: key(), upstreamModel: 'claude-sonnet-4-5' };

type Json = Record<string, unknown>;
const encode = (body: Json, t: AdapterTarget = target): Json => encodeAnthropicRequest({ model: 'alias', ...body }, t);
const user = (content: unknown): Json => ({ role: 'user', content });

function rejects(body: Json, param: string): void {
  assert.throws(() => encode(body), (err: unknown) => {
    assert.ok(err instanceof GatewayError);
    assert.equal(err.code, 'invalid_request');
    assert.equal(err.status, 400);
    assert.equal(err.param, param);
    assert.ok(err.message.includes(param), err.message);
    return true;
  });
}

test('the translator is the encoder, and the model is the target upstream model', () => {
  const out = anthropicAdapter.translator!.encodeRequest({ model: 'alias', messages: [user('hi')] }, target);
  assert.deepEqual(out, { model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4096 });
});

// Spec 2 §4.2, messages-family row: top-level `system`, joined with leading system messages,
// developer messages moved from anywhere in the conversation.
test('delivery: leading system messages are joined into the system field', () => {
  const out = encode({ messages: [{ role: 'system', content: 'You are terse.' }, { role: 'system', content: 'Answer in French.' }, user('hi')] });
  assert.equal(out.system, 'You are terse.\n\nAnswer in French.');
  assert.deepEqual(out.messages, [{ role: 'user', content: 'hi' }]);
});

test('delivery: a developer message anywhere moves into the system field', () => {
  const out = encode({
    messages: [user('a'), { role: 'assistant', content: 'b' }, { role: 'developer', content: 'be brief' }, user('c')],
  });
  assert.equal(out.system, 'be brief');
  assert.deepEqual(out.messages, [
    { role: 'user', content: 'a' },
    { role: 'assistant', content: 'b' },
    { role: 'user', content: 'c' },
  ]);
});

test('delivery: system and developer texts keep conversation order; a late system message moves too', () => {
  const out = encode({
    messages: [
      { role: 'system', content: 'S1' },
      { role: 'developer', content: 'D1' },
      user('u1'),
      { role: 'developer', content: [{ type: 'text', text: 'D2' }] },
      { role: 'assistant', content: 'a1' },
      { role: 'system', content: 'S2' },
      user('u2'),
    ],
  });
  assert.equal(out.system, 'S1\n\nD1\n\nD2\n\nS2');
  assert.deepEqual(out.messages, [
    { role: 'user', content: 'u1' },
    { role: 'assistant', content: 'a1' },
    { role: 'user', content: 'u2' },
  ]);
});

test('delivery: removing a system message between two user messages merges them into one turn', () => {
  const out = encode({ messages: [user('a'), { role: 'developer', content: 'x' }, user('b')] });
  assert.deepEqual(out.messages, [{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] }]);
});

test('system with cache_control keeps the block form', () => {
  const out = encode({
    messages: [
      { role: 'system', content: [{ type: 'text', text: 'long context', cache_control: { type: 'ephemeral' } }] },
      { role: 'developer', content: 'rules' },
      user('hi'),
    ],
  });
  assert.deepEqual(out.system, [
    { type: 'text', text: 'long context', cache_control: { type: 'ephemeral' } },
    { type: 'text', text: 'rules' },
  ]);
});

test('no system field without system messages; empty system text is dropped', () => {
  assert.equal('system' in encode({ messages: [user('hi')] }), false);
  assert.equal('system' in encode({ messages: [{ role: 'system', content: '' }, user('hi')] }), false);
});

test('user parts: text, base64 image, URL image', () => {
  const out = encode({
    messages: [
      user([
        { type: 'text', text: 'What is in these?' },
        { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
        { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg', detail: 'high' } },
      ]),
    ],
  });
  assert.deepEqual(out.messages, [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'What is in these?' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
        { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
      ],
    },
  ]);
});

test('an image that is neither a data URL nor http(s) is rejected naming the field', () => {
  rejects({ messages: [user([{ type: 'image_url', image_url: { url: 'ftp://x/y.png' } }])] }, 'messages[0].content[0].image_url.url');
});

test('file parts become document blocks', () => {
  const out = encode({
    messages: [
      user([
        { type: 'file', file: { filename: 'report.pdf', file_data: 'data:application/pdf;base64,JVBERi0xLjQK' } },
        { type: 'file', file: { file_data: `data:text/plain;base64,${Buffer.from('plain notes').toString('base64')}` } },
        { type: 'text', text: 'Summarise.' },
      ]),
    ],
  });
  assert.deepEqual((out.messages as Json[])[0].content, [
    { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0xLjQK' }, title: 'report.pdf' },
    { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'plain notes' } },
    { type: 'text', text: 'Summarise.' },
  ]);
});

test('a file reference without data and unsupported part types are rejected', () => {
  rejects({ messages: [user([{ type: 'file', file: { file_id: 'file-abc' } }])] }, 'messages[0].content[0].file.file_data');
  rejects({ messages: [user([{ type: 'input_audio', input_audio: { data: 'x', format: 'wav' } }])] }, 'messages[0].content[0].type');
});

test('parseDataUrl reads the media type and payload', () => {
  assert.deepEqual(parseDataUrl('data:image/jpeg;base64,/9j/4AAQ'), { mediaType: 'image/jpeg', data: '/9j/4AAQ' });
  assert.equal(parseDataUrl('data:text/plain,hello'), undefined);
  assert.equal(parseDataUrl('https://x/y'), undefined);
});

const weatherCall = { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } };

test('tool round trip: assistant tool_calls → tool_use, tool messages → tool_result in one user turn with the next user message', () => {
  const out = encode({
    messages: [
      user('Weather in Paris and Rome?'),
      {
        role: 'assistant',
        content: 'Checking.',
        reasoning_content: 'I need two calls.',
        tool_calls: [weatherCall, { id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '18C' },
      { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: '24C' }] },
      user('And tomorrow?'),
    ],
  });
  assert.deepEqual(out.messages, [
    { role: 'user', content: 'Weather in Paris and Rome?' },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Checking.' },
        { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
        { type: 'tool_use', id: 'call_2', name: 'get_weather', input: { city: 'Rome' } },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'call_1', content: '18C' },
        { type: 'tool_result', tool_use_id: 'call_2', content: [{ type: 'text', text: '24C' }] },
        { type: 'text', text: 'And tomorrow?' },
      ],
    },
  ]);
});

test('assistant with only tool calls (content null) and empty arguments', () => {
  const out = encode({
    messages: [user('now?'), { role: 'assistant', content: null, tool_calls: [{ id: 't', type: 'function', function: { name: 'now', arguments: '' } }] }],
  });
  assert.deepEqual((out.messages as Json[])[1], { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'now', input: {} }] });
});

test('tool results are put before other blocks of their user turn', () => {
  const out = encode({
    messages: [{ role: 'assistant', content: null, tool_calls: [weatherCall] }, user('extra'), { role: 'tool', tool_call_id: 'call_1', content: 'ok' }],
  });
  assert.deepEqual((out.messages as Json[])[1].content, [
    { type: 'tool_result', tool_use_id: 'call_1', content: 'ok' },
    { type: 'text', text: 'extra' },
  ]);
});

test('tool-call arguments that are not a JSON object are rejected naming the field', () => {
  const bad = (args: string): Json => ({
    messages: [user('x'), { role: 'assistant', content: null, tool_calls: [weatherCall, { id: 'c', type: 'function', function: { name: 'f', arguments: args } }] }],
  });
  rejects(bad('{not json'), 'messages[1].tool_calls[1].function.arguments');
  rejects(bad('[1,2]'), 'messages[1].tool_calls[1].function.arguments');
  rejects(bad('"text"'), 'messages[1].tool_calls[1].function.arguments');
  rejects(bad('null'), 'messages[1].tool_calls[1].function.arguments');
});

test('a tool message without tool_call_id is rejected', () => {
  rejects({ messages: [user('x'), { role: 'tool', content: 'r' }] }, 'messages[1].tool_call_id');
});

test('consecutive same-role messages are merged (Anthropic requires alternation)', () => {
  const out = encode({
    messages: [user('a'), user([{ type: 'text', text: 'b' }]), { role: 'assistant', content: 'c' }, { role: 'assistant', content: 'd' }],
  });
  assert.deepEqual(out.messages, [
    { role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] },
    { role: 'assistant', content: [{ type: 'text', text: 'c' }, { type: 'text', text: 'd' }] },
  ]);
});

test('tools: function tools map to name/description/input_schema', () => {
  const out = encode({
    messages: [user('x')],
    tools: [
      { type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, strict: true } },
      { type: 'function', function: { name: 'now' } },
    ],
  });
  assert.deepEqual(out.tools, [
    { name: 'get_weather', description: 'Weather', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
    { name: 'now', input_schema: { type: 'object', properties: {} } },
  ]);
  rejects({ messages: [user('x')], tools: [{ type: 'web_search' }] }, 'tools[0].type');
});

test('tool_choice mapping and parallel_tool_calls', () => {
  const tools = [{ type: 'function', function: { name: 'f' } }];
  const choice = (tool_choice: unknown, extra: Json = {}): unknown => encode({ messages: [user('x')], tools, tool_choice, ...extra }).tool_choice;
  assert.deepEqual(choice('auto'), { type: 'auto' });
  assert.deepEqual(choice('required'), { type: 'any' });
  assert.deepEqual(choice('none'), { type: 'none' });
  assert.deepEqual(choice({ type: 'function', function: { name: 'f' } }), { type: 'tool', name: 'f' });
  assert.deepEqual(choice('required', { parallel_tool_calls: false }), { type: 'any', disable_parallel_tool_use: true });
  assert.deepEqual(choice(undefined, { parallel_tool_calls: false }), { type: 'auto', disable_parallel_tool_use: true });
  assert.deepEqual(choice('none', { parallel_tool_calls: false }), { type: 'none' });
  assert.deepEqual(choice('auto', { parallel_tool_calls: true }), { type: 'auto' });
  assert.equal(choice(undefined), undefined);
  // Without tools there is nothing to choose from.
  assert.equal('tool_choice' in encode({ messages: [user('x')], tool_choice: 'auto' }), false);
});

test('stop, metadata, sampling, stream', () => {
  const out = encode({ messages: [user('x')], stop: 'END', user: 'u-1', temperature: 0.3, top_p: 0.9, top_k: 40, stream: true });
  assert.deepEqual(out.stop_sequences, ['END']);
  assert.deepEqual(out.metadata, { user_id: 'u-1' });
  assert.equal(out.temperature, 0.3);
  assert.equal(out.top_p, 0.9);
  assert.equal(out.top_k, 40);
  assert.equal(out.stream, true);
  const arr = encode({ messages: [user('x')], stop: ['a', 'b'], metadata: { user_id: 'm-1', other: 'x' }, user: 'u-2' });
  assert.deepEqual(arr.stop_sequences, ['a', 'b']);
  assert.deepEqual(arr.metadata, { user_id: 'm-1' });
});

test('max_tokens: caller max_tokens, else max_completion_tokens, else 4096', () => {
  assert.equal(encode({ messages: [user('x')], max_tokens: 100 }).max_tokens, 100);
  assert.equal(encode({ messages: [user('x')], max_completion_tokens: 200 }).max_tokens, 200);
  assert.equal(encode({ messages: [user('x')], max_tokens: 100, max_completion_tokens: 200 }).max_tokens, 100);
  assert.equal(encode({ messages: [user('x')] }).max_tokens, 4096);
  assert.equal('max_completion_tokens' in encode({ messages: [user('x')], max_completion_tokens: 200 }), false);
  rejects({ messages: [user('x')], max_tokens: 0 }, 'max_tokens');
});

test('OpenAI-only fields are not sent', () => {
  const out = encode({
    messages: [user('x')],
    n: 1, logprobs: true, top_logprobs: 2, presence_penalty: 0.1, frequency_penalty: 0.1, seed: 7, logit_bias: {},
    response_format: { type: 'json_object' }, stream_options: { include_usage: true }, reasoning_effort: 'none',
    parallel_tool_calls: true, user: 'u', service_tier: 'auto', store: false, modalities: ['text'],
  });
  assert.deepEqual(Object.keys(out).sort(), ['max_tokens', 'messages', 'metadata', 'model']);
});

test('reasoning_effort table without max_tokens: budget, and max_tokens = budget + 4096', () => {
  const table: [string, number][] = [['minimal', 1024], ['low', 1024], ['medium', 2048], ['high', 4096], ['xhigh', 8192], ['max', 16384]];
  assert.equal(Object.keys(THINKING_BUDGETS).length, table.length);
  for (const [effort, budget] of table) {
    const out = encode({ messages: [user('x')], reasoning_effort: effort });
    assert.deepEqual(out.thinking, { type: 'enabled', budget_tokens: budget }, effort);
    assert.equal(out.max_tokens, budget + 4096, effort);
    assert.equal('reasoning_effort' in out, false);
  }
});

test('reasoning_effort with a caller max_tokens: kept, caps the budget below it; 1024 or less leaves thinking off', () => {
  const run = (effort: string, max_tokens: number): Json => encode({ messages: [user('x')], reasoning_effort: effort, max_tokens });
  const off = run('high', 1024);
  assert.equal('thinking' in off, false);
  assert.equal(off.max_tokens, 1024);
  assert.equal('thinking' in run('low', 500), false);
  assert.deepEqual(run('high', 1025).thinking, { type: 'enabled', budget_tokens: 1024 });
  assert.equal(run('high', 1025).max_tokens, 1025);
  assert.deepEqual(run('high', 2000).thinking, { type: 'enabled', budget_tokens: 1999 });
  assert.equal(run('high', 2000).max_tokens, 2000);
  assert.deepEqual(run('medium', 5000).thinking, { type: 'enabled', budget_tokens: 2048 });
  assert.equal(run('medium', 5000).max_tokens, 5000);
  assert.deepEqual(run('low', 1025).thinking, { type: 'enabled', budget_tokens: 1024 });
  assert.equal(thinkingBudget('max', undefined), 16384);
  assert.equal(thinkingBudget('high', 1024), undefined);
});

test("reasoning_effort 'none' leaves thinking off; an unknown value is rejected", () => {
  const out = encode({ messages: [user('x')], reasoning_effort: 'none' });
  assert.equal('thinking' in out, false);
  assert.equal(out.max_tokens, 4096);
  rejects({ messages: [user('x')], reasoning_effort: 'extreme' }, 'reasoning_effort');
});

test("the caller's own thinking object is sent unchanged and wins over reasoning_effort", () => {
  const thinking = { type: 'enabled', budget_tokens: 3000 };
  const out = encode({ messages: [user('x')], thinking, reasoning_effort: 'max', max_tokens: 9000 });
  assert.deepEqual(out.thinking, thinking);
  assert.equal(out.max_tokens, 9000);
  // Without max_tokens the caller's budget gets the same headroom as a derived one.
  assert.equal(encode({ messages: [user('x')], thinking }).max_tokens, 3000 + 4096);
  const disabled = encode({ messages: [user('x')], thinking: { type: 'disabled' }, reasoning_effort: 'high', temperature: 0.2 });
  assert.deepEqual(disabled.thinking, { type: 'disabled' });
  assert.equal(disabled.temperature, 0.2);
});

test('with thinking on, temperature other than 1, top_k and top_p below 0.95 are not sent', () => {
  const on = encode({ messages: [user('x')], reasoning_effort: 'high', temperature: 0.7, top_k: 5, top_p: 0.5 });
  assert.equal('temperature' in on, false);
  assert.equal('top_k' in on, false);
  assert.equal('top_p' in on, false);
  const one = encode({ messages: [user('x')], reasoning_effort: 'high', temperature: 1, top_p: 0.97 });
  assert.equal(one.temperature, 1);
  assert.equal(one.top_p, 0.97);
  // Thinking left off by the max_tokens rule: sampling goes through.
  const off = encode({ messages: [user('x')], reasoning_effort: 'high', max_tokens: 1000, temperature: 0.7 });
  assert.equal(off.temperature, 0.7);
});

test('thinking from reasoning_effort stays off when the tool choice forces a tool', () => {
  const tools = [{ type: 'function', function: { name: 'f' } }];
  for (const tool_choice of ['required', { type: 'function', function: { name: 'f' } }]) {
    const out = encode({ messages: [user('x')], tools, tool_choice, reasoning_effort: 'high', temperature: 0.5 });
    assert.equal('thinking' in out, false);
    assert.equal(out.temperature, 0.5);
    assert.equal(out.max_tokens, 4096);
  }
  assert.ok('thinking' in encode({ messages: [user('x')], tools, tool_choice: 'auto', reasoning_effort: 'high' }));
});

test('thinking from reasoning_effort stays off while the last assistant turn used tools', () => {
  const loop = [user('x'), { role: 'assistant', content: null, tool_calls: [weatherCall] }, { role: 'tool', tool_call_id: 'call_1', content: 'r' }];
  assert.equal('thinking' in encode({ messages: loop, reasoning_effort: 'medium' }), false);
  // Once the assistant answered in text, the next user turn may think again.
  const after = [...loop, { role: 'assistant', content: 'done' }, user('next')];
  assert.deepEqual(encode({ messages: after, reasoning_effort: 'medium' }).thinking, { type: 'enabled', budget_tokens: 2048 });
});


test('malformed messages are rejected naming the field', () => {
  rejects({ messages: 'hi' }, 'messages');
  rejects({ messages: [user(42)] }, 'messages[0].content');
  rejects({ messages: [user([{ type: 'text', text: 5 }])] }, 'messages[0].content[0].text');
});
