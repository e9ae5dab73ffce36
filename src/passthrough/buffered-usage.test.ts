import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bufferedTokenCounts } from './buffered-usage.ts';

const usage = { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 };

test('chat, responses and completions read every supported field of the top-level usage', () => {
  const body = JSON.stringify({ id: 'x', choices: [], usage: { ...usage, prompt_tokens_details: { cached_tokens: 3 } } });
  for (const shape of ['chat', 'responses', 'completions'] as const) {
    assert.deepEqual(bufferedTokenCounts(shape, body), { prompt: 12, completion: 7, total: 19, cached: 3 });
  }
});

test('rerank reads input tokens only', () => {
  assert.deepEqual(bufferedTokenCounts('rerank', JSON.stringify({ results: [], usage })), { prompt: 12 });
  assert.deepEqual(bufferedTokenCounts('rerank', JSON.stringify({ results: [], meta: { billed_units: { input_tokens: 40 } } })), { prompt: 40 });
});

test('native envelopes use the envelope arithmetic', () => {
  assert.deepEqual(bufferedTokenCounts('native', JSON.stringify({ output: {}, usage: { input_tokens: 5, output_tokens: 2, image_tokens: 3 } })), {
    prompt: 8, completion: 2,
  });
});

test('opaque requests and bodies without usage record nothing', () => {
  assert.equal(bufferedTokenCounts('opaque', JSON.stringify({ usage })), undefined);
  assert.equal(bufferedTokenCounts('chat', JSON.stringify({ id: 'x' })), undefined);
  assert.equal(bufferedTokenCounts('chat', 'not json'), undefined);
  assert.equal(bufferedTokenCounts('chat', JSON.stringify({ usage: null })), undefined);
});
