import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { canonicalUsage, decodeAnthropicResponse, finishReason } from './decode.ts';
import { anthropicAdapter } from './index.ts';

const NOW = 1_750_000_000;
const fixture = (name: string): string => readFileSync(new URL(`./__fixtures__/${name}`, import.meta.url), 'utf8');

test('text message: text blocks joined, upstream id and model, usage with cache tokens', () => {
  assert.deepEqual(decodeAnthropicResponse(fixture('message-text.json'), NOW), {
    id: 'msg_01XFDUDYJgAACzvnptvVoYEL',
    object: 'chat.completion',
    created: NOW,
    model: 'claude-sonnet-4-5-20250929',
    choices: [{ index: 0, message: { role: 'assistant', content: 'Hello! How can I help?', refusal: null }, finish_reason: 'stop', logprobs: null }],
    usage: {
      prompt_tokens: 12 + 24000 + 1800,
      completion_tokens: 9,
      total_tokens: 12 + 24000 + 1800 + 9,
      prompt_tokens_details: { cached_tokens: 24000, cache_creation_tokens: 1800 },
    },
  });
});

test('tool-use message: tool_calls with JSON arguments, thinking as reasoning_content, redacted thinking dropped', () => {
  const out = decodeAnthropicResponse(fixture('message-tool-use.json'), NOW);
  assert.ok(!(out instanceof Error));
  const choice = (out.choices as Record<string, unknown>[])[0];
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.deepEqual(choice.message, {
    role: 'assistant',
    content: 'Let me look that up.',
    refusal: null,
    tool_calls: [{ id: 'toolu_01A09q90qw90lq917835lq9', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Paris, France","unit":"celsius"}' } }],
    reasoning_content: 'The user asks for the weather in Paris. I should call get_weather.',
  });
  assert.deepEqual(out.usage, {
    prompt_tokens: 380,
    completion_tokens: 96,
    total_tokens: 476,
    prompt_tokens_details: { cached_tokens: 0, cache_creation_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 41 },
  });
});

test('content is null when the message has only tool calls; a missing input becomes {}', () => {
  const out = decodeAnthropicResponse(JSON.stringify({
    id: 'msg_1', type: 'message', role: 'assistant', model: 'claude', stop_reason: 'tool_use',
    content: [{ type: 'tool_use', id: 'toolu_1', name: 'now', input: null }],
    usage: { input_tokens: 5, output_tokens: 7 },
  }), NOW);
  assert.ok(!(out instanceof Error));
  const message = (out.choices as Record<string, unknown>[])[0].message as Record<string, unknown>;
  assert.equal(message.content, null);
  assert.deepEqual(message.tool_calls, [{ id: 'toolu_1', type: 'function', function: { name: 'now', arguments: '{}' } }]);
  assert.equal('reasoning_content' in message, false);
  assert.deepEqual(out.usage, { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 });
});

test('finish reasons', () => {
  assert.equal(finishReason('end_turn'), 'stop');
  assert.equal(finishReason('stop_sequence'), 'stop');
  assert.equal(finishReason('max_tokens'), 'length');
  assert.equal(finishReason('tool_use'), 'tool_calls');
  assert.equal(finishReason('refusal'), 'content_filter');
  assert.equal(finishReason('pause_turn'), 'stop');
  assert.equal(finishReason('model_context_window_exceeded'), 'length');
  assert.equal(finishReason(null), 'stop');
  assert.equal(finishReason('new_reason'), 'stop');
  const refused = decodeAnthropicResponse('{"id":"m","type":"message","model":"c","content":[],"stop_reason":"refusal","usage":{"input_tokens":1,"output_tokens":0}}', NOW);
  assert.ok(!(refused instanceof Error));
  assert.equal((refused.choices as Record<string, unknown>[])[0].finish_reason, 'content_filter');
});

test('usage arithmetic: prompt = input + cache reads + cache writes', () => {
  assert.deepEqual(canonicalUsage({ input_tokens: 3, cache_read_input_tokens: 40, cache_creation_input_tokens: 500, output_tokens: 6 }), {
    prompt_tokens: 543,
    completion_tokens: 6,
    total_tokens: 549,
    prompt_tokens_details: { cached_tokens: 40, cache_creation_tokens: 500 },
  });
  assert.equal(canonicalUsage(undefined), undefined);
});

test('bodies that are not an Anthropic message are returned as Errors, not thrown', () => {
  for (const text of ['not json', '[]', '{"type":"message"}', '{"object":"chat.completion","choices":[]}', '{"type":"completion","content":[]}']) {
    assert.ok(decodeAnthropicResponse(text, NOW) instanceof Error, text);
  }
  const err = decodeAnthropicResponse('{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', NOW);
  assert.ok(err instanceof Error);
  assert.match(err.message, /Overloaded/);
});

test('the translator decodes with the current time', () => {
  const before = Math.floor(Date.now() / 1000);
  const out = anthropicAdapter.translator!.decodeResponse(fixture('message-text.json'));
  assert.ok(!(out instanceof Error));
  assert.ok((out.created as number) >= before && (out.created as number) <= before + 5);
});
