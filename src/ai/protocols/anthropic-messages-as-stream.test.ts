import { test } from 'node:test';
import assert from 'node:assert/strict';
import { messageAsEvents } from './anthropic-messages-as-stream.ts';

function events(text: string): Array<{ event: string; data: any }> {
  return text.split('\n\n').filter((b) => b !== '').map((b) => {
    const [e, d] = b.split('\n');
    return { event: e.slice(7), data: JSON.parse(d.slice(6)) };
  });
}

test('a message becomes the Messages event sequence, blocks as deltas', () => {
  const usage = { input_tokens: 10, output_tokens: 4, cache_read_input_tokens: 2 };
  const out = events(messageAsEvents({
    id: 'msg_1', type: 'message', role: 'assistant', model: 'alias',
    content: [
      { type: 'thinking', thinking: 'hmm', signature: 'sig' },
      { type: 'text', text: 'hello' },
      { type: 'tool_use', id: 'tu', name: 'f', input: { a: 1 } },
      { type: 'redacted_thinking', data: 'opaque' },
    ],
    stop_reason: 'tool_use', stop_sequence: null, usage,
  })!);
  assert.deepEqual(out.map((e) => e.event), [
    'message_start',
    'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_stop',
    'content_block_start', 'content_block_delta', 'content_block_stop',
    'content_block_start', 'content_block_delta', 'content_block_stop',
    'content_block_start', 'content_block_stop',
    'message_delta', 'message_stop',
  ]);
  for (const e of out) assert.equal(e.data.type, e.event);
  assert.deepEqual(out[0].data.message, { id: 'msg_1', type: 'message', role: 'assistant', model: 'alias', content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 0 } });
  assert.deepEqual(out[1].data.content_block, { type: 'thinking', thinking: '', signature: '' });
  assert.deepEqual(out[3].data.delta, { type: 'signature_delta', signature: 'sig' });
  assert.deepEqual(out[6].data, { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'hello' } });
  assert.deepEqual(out[8].data.content_block, { type: 'tool_use', id: 'tu', name: 'f', input: {} });
  assert.deepEqual(out[9].data.delta, { type: 'input_json_delta', partial_json: '{"a":1}' });
  assert.deepEqual(out[11].data.content_block, { type: 'redacted_thinking', data: 'opaque' });
  assert.deepEqual(out[13].data, { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage });
});

test('something that is not a message has no events', () => {
  assert.equal(messageAsEvents({ type: 'error', error: { type: 'x', message: 'y' } }), undefined);
  assert.equal(messageAsEvents({ unrelated: true }), undefined);
});
