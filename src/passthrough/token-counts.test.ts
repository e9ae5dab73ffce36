import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mergeTokenCounts, nativeTokenCounts, readTokenCounts, rerankTokenCounts } from './token-counts.ts';

test('OpenAI chat usage, with cached and reasoning details', () => {
  assert.deepEqual(readTokenCounts({
    prompt_tokens: 12, completion_tokens: 7, total_tokens: 19,
    prompt_tokens_details: { cached_tokens: 4 }, completion_tokens_details: { reasoning_tokens: 2 },
  }), { prompt: 12, completion: 7, total: 19, cached: 4, reasoning: 2 });
});

test('responses usage spellings', () => {
  assert.deepEqual(readTokenCounts({
    input_tokens: 30, output_tokens: 9, total_tokens: 39, input_tokens_details: { cached_tokens: 5 }, output_tokens_details: { reasoning_tokens: 3 },
  }), { prompt: 30, completion: 9, total: 39, cached: 5, reasoning: 3 });
});

test('Anthropic usage: cache reads and creation', () => {
  assert.deepEqual(readTokenCounts({ input_tokens: 10, output_tokens: 1, cache_read_input_tokens: 50, cache_creation_input_tokens: 20 }), {
    prompt: 10, completion: 1, cached: 50, cacheCreation: 20,
  });
});

test('vendor spellings: prompt_cache_hit_tokens, cached_tokens, reasoning_tokens', () => {
  assert.deepEqual(readTokenCounts({ prompt_tokens: 3, prompt_cache_hit_tokens: 2, reasoning_tokens: 1 }), { prompt: 3, cached: 2, reasoning: 1 });
  assert.deepEqual(readTokenCounts({ cached_tokens: 8 }), { cached: 8 });
});

test('no known field, or not an object: nothing', () => {
  assert.equal(readTokenCounts({ foo: 1 }), undefined);
  assert.equal(readTokenCounts(null), undefined);
  assert.equal(readTokenCounts([1]), undefined);
  assert.equal(readTokenCounts({ prompt_tokens: -1, completion_tokens: 'x' }), undefined);
});

test('merge takes the field-wise maximum', () => {
  assert.deepEqual(mergeTokenCounts({ prompt: 10, completion: 1 }, { completion: 25 }), { prompt: 10, completion: 25 });
  assert.deepEqual(mergeTokenCounts(undefined, { prompt: 1 }), { prompt: 1 });
  assert.deepEqual(mergeTokenCounts({ prompt: 5 }, undefined), { prompt: 5 });
  assert.deepEqual(mergeTokenCounts({ prompt: 5 }, { prompt: 3 }), { prompt: 5 });
});

test('rerank: input tokens from prompt_tokens, input_tokens, total_tokens or meta.billed_units', () => {
  assert.deepEqual(rerankTokenCounts({ usage: { prompt_tokens: 11, total_tokens: 20 } }), { prompt: 11 });
  assert.deepEqual(rerankTokenCounts({ usage: { input_tokens: 12 } }), { prompt: 12 });
  assert.deepEqual(rerankTokenCounts({ usage: { total_tokens: 13 } }), { prompt: 13 });
  assert.deepEqual(rerankTokenCounts({ meta: { billed_units: { input_tokens: 14, search_units: 1 } } }), { prompt: 14 });
  assert.equal(rerankTokenCounts({ results: [] }), undefined);
});

test('native envelope: total minus output when a total is given', () => {
  assert.deepEqual(nativeTokenCounts({ usage: { input_tokens: 999, output_tokens: 10, total_tokens: 40, image_tokens: 5 } }), {
    prompt: 30, completion: 10, total: 40,
  });
  assert.deepEqual(nativeTokenCounts({ usage: { completion_tokens: 4, total_tokens: 9 } }), { prompt: 5, completion: 4, total: 9 });
});

test('native envelope: input plus top-level image_tokens, nested image tokens not added', () => {
  assert.deepEqual(nativeTokenCounts({ usage: { input_tokens: 20, output_tokens: 5, image_tokens: 7 } }), { prompt: 27, completion: 5 });
  assert.deepEqual(nativeTokenCounts({ usage: { prompt_tokens: 20, output_tokens: 5, input_tokens_details: { image_tokens: 7 } } }), {
    prompt: 20, completion: 5,
  });
});

test('native envelope: cached and reasoning by their standard names', () => {
  assert.deepEqual(nativeTokenCounts({
    usage: { input_tokens: 20, output_tokens: 5, prompt_tokens_details: { cached_tokens: 6 }, output_tokens_details: { reasoning_tokens: 2 } },
  }), { prompt: 20, completion: 5, cached: 6, reasoning: 2 });
  assert.equal(nativeTokenCounts({ output: {} }), undefined);
});
