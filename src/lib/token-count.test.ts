import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tokenCount } from './token-count.ts';

test('only finite, non-negative numbers are token counts', () => {
  assert.equal(tokenCount(12), 12);
  assert.equal(tokenCount(0), 0);
  assert.equal(tokenCount(7.9), 7);
  for (const bad of ['12', -1, Number.POSITIVE_INFINITY, Number.NaN, null, undefined, {}, [3]]) assert.equal(tokenCount(bad), undefined, String(bad));
});

test('a count past 2^53 − 1 is no count (no exact integer; Redis refuses 1e21 as "not an integer")', () => {
  assert.equal(tokenCount(Number.MAX_SAFE_INTEGER), Number.MAX_SAFE_INTEGER);
  assert.equal(tokenCount(Number.MAX_SAFE_INTEGER + 2), undefined);
  assert.equal(tokenCount(1e21), undefined);
});
