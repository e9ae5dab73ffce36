import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventStreamTap } from './stream-tap.ts';
import type { RequestShape } from './request-shape.ts';

/** Feed `text` through a tap in pieces of `size` bytes (every chunk boundary for size 1). */
function tapOf(shape: RequestShape, text: string, size = 7): EventStreamTap {
  const tap = new EventStreamTap(shape);
  const bytes = Buffer.from(text);
  for (let i = 0; i < bytes.length; i += size) tap.push(bytes.subarray(i, i + size));
  tap.end();
  return tap;
}

const data = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`;

const openaiChat = [
  data({ id: 'c', choices: [{ delta: { content: 'hi' } }], usage: null }),
  data({ id: 'c', choices: [], usage: { prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 } }),
  'data: [DONE]\n\n',
].join('');

const anthropic = [
  'event: message_start\n' + data({ type: 'message_start', message: { id: 'm', usage: { input_tokens: 25, output_tokens: 1, cache_read_input_tokens: 5 } } }),
  'event: content_block_delta\n' + data({ type: 'content_block_delta', delta: { type: 'text_delta', text: 'usage is fine' } }),
  'event: message_delta\n' + data({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 15 } }),
  'event: message_stop\n' + data({ type: 'message_stop' }),
].join('');

const responses = [
  'event: response.created\n' + data({ type: 'response.created', response: { id: 'r', usage: null } }),
  'event: response.output_text.delta\n' + data({ type: 'response.output_text.delta', delta: 'x' }),
  'event: response.completed\n' + data({ type: 'response.completed', response: { id: 'r', usage: { input_tokens: 30, output_tokens: 6, total_tokens: 36, output_tokens_details: { reasoning_tokens: 2 } } } }),
].join('');

test('chat streams: usage from the usage chunk, at every chunk boundary', () => {
  for (const size of [1, 3, 64, 4096]) {
    assert.deepEqual(tapOf('chat', openaiChat, size).usage, { prompt: 9, completion: 4, total: 13 }, `size ${size}`);
  }
});

test('messages-style streams: prompt side from message_start, output from message_delta (max merge)', () => {
  assert.deepEqual(tapOf('chat', anthropic, 1).usage, { prompt: 25, completion: 15, cached: 5 });
});

test('responses streams: usage from the terminal response event', () => {
  assert.deepEqual(tapOf('responses', responses).usage, { prompt: 30, completion: 6, total: 36, reasoning: 2 });
});

test('opaque streams: top-level usage on any frame, or a flat report on a labelled frame', () => {
  assert.deepEqual(tapOf('opaque', data({ result: 1, usage: { input_tokens: 3, output_tokens: 4 } })).usage, { prompt: 3, completion: 4 });
  assert.deepEqual(tapOf('opaque', 'event: usage\ndata: {"prompt_tokens":5,"completion_tokens":6}\n\n').usage, { prompt: 5, completion: 6 });
  assert.deepEqual(tapOf('rerank', 'event: token_usage\ndata: {"input_tokens":7}\n\n').usage, { prompt: 7 });
  // An unlabelled flat report is not usage; nested usage of an opaque stream is not read.
  assert.equal(tapOf('opaque', data({ prompt_tokens: 5, completion_tokens: 6 })).usage, undefined);
  assert.equal(tapOf('native', data({ type: 'message_start', message: { usage: { input_tokens: 25 } } })).usage, undefined);
});

test('the last frame counts even without its terminating blank line', () => {
  assert.deepEqual(tapOf('opaque', 'event: usage\ndata: {"prompt_tokens":5}').usage, { prompt: 5 });
});

test('in-band errors: event: error, type error, response.failed, a top-level error', () => {
  assert.deepEqual(tapOf('chat', 'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n').inBandError, { status: 502 });
  assert.equal(tapOf('chat', data({ error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' } })).inBandError?.status, 429);
  assert.equal(tapOf('chat', 'event: error\ndata: {"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}\n\n').inBandError?.status, 429);
  assert.equal(tapOf('responses', data({ type: 'response.failed', response: { error: { code: 'server_error', message: 'boom' } } })).inBandError?.status, 502);
  assert.equal(tapOf('responses', data({ type: 'error', code: 'invalid_request_error', message: 'bad' })).inBandError?.status, 400);
  assert.equal(tapOf('opaque', 'event: error\ndata: not json\n\n').inBandError?.status, 502);
});

test('JSON-RPC error replies and the word error in content are not stream failures', () => {
  assert.equal(tapOf('opaque', data({ jsonrpc: '2.0', id: 1, error: { code: -32601, message: 'Method not found' } })).inBandError, undefined);
  assert.equal(tapOf('chat', data({ choices: [{ delta: { content: 'the "error" field' } }] })).inBandError, undefined);
  for (const none of [false, '', null, 0]) {
    assert.equal(tapOf('opaque', data({ text: 'a', error: none })).inBandError, undefined, `"error": ${JSON.stringify(none)}`);
  }
  assert.equal(tapOf('opaque', data({ error: 'quota exhausted' })).inBandError?.status, 502);
  assert.equal(tapOf('chat', data({ error: null, choices: [] })).inBandError, undefined);
});

test('a frame over the splitter bound makes the tap blind, not the relay fail', () => {
  const tap = new EventStreamTap('chat');
  tap.push(Buffer.alloc(17 * 1024 * 1024, 97));
  tap.push(Buffer.from(data({ usage: { prompt_tokens: 1 } })));
  tap.end();
  assert.equal(tap.usage, undefined);
});
