import { test } from 'node:test';
import assert from 'node:assert/strict';
import { completionAsChunks } from './openai-chat-as-stream.ts';

const usage = { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 };

test('a completion becomes a delta chunk, a finish chunk and a usage-only chunk', () => {
  const chunks = completionAsChunks({
    id: 'c1', object: 'chat.completion', created: 9, model: 'up', system_fingerprint: 'fp',
    choices: [{ index: 0, message: { role: 'assistant', content: 'hi', tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{}' } }] }, finish_reason: 'tool_calls' }],
    usage,
  });
  assert.deepEqual(chunks, [
    { object: 'chat.completion.chunk', id: 'c1', created: 9, model: 'up', system_fingerprint: 'fp', choices: [{ index: 0, delta: { role: 'assistant', content: 'hi', tool_calls: [{ index: 0, id: 't1', type: 'function', function: { name: 'f', arguments: '{}' } }] }, logprobs: null, finish_reason: null }] },
    { object: 'chat.completion.chunk', id: 'c1', created: 9, model: 'up', system_fingerprint: 'fp', choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'tool_calls' }] },
    { object: 'chat.completion.chunk', id: 'c1', created: 9, model: 'up', system_fingerprint: 'fp', choices: [], usage },
  ]);
});

test('without usage there is no usage chunk; a missing role or finish reason gets the default', () => {
  const chunks = completionAsChunks({ id: 'c', choices: [{ message: { content: 'x' } }] })!;
  assert.equal(chunks.length, 2);
  assert.equal((chunks[0].choices as any)[0].delta.role, 'assistant');
  assert.equal((chunks[1].choices as any)[0].finish_reason, 'stop');
});

test('something without a choices list is no completion', () => {
  assert.equal(completionAsChunks({ error: { message: 'x' } }), undefined);
});
