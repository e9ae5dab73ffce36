import assert from 'node:assert/strict';
import { test } from 'node:test';
import { median, percentile, summarize } from './stats.ts';

test('percentile is nearest-rank on sorted samples', () => {
  const s = Float64Array.from({ length: 100 }, (_, i) => i + 1);
  assert.equal(percentile(s, 0.5), 50);
  assert.equal(percentile(s, 0.99), 99);
  assert.equal(percentile(s, 1), 100);
  assert.equal(percentile([7], 0.99), 7);
  assert.ok(Number.isNaN(percentile([], 0.5)));
});

test('summarize sorts numerically, not as strings', () => {
  const s = summarize([900, 1000, 80, 7]);
  assert.equal(s.count, 4);
  assert.equal(s.p50, 80);
  assert.equal(s.max, 1000);
  assert.equal(s.mean, (900 + 1000 + 80 + 7) / 4);
});

test('median ignores non-finite values and averages the middle pair', () => {
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.equal(median([Number.NaN, 5]), 5);
  assert.ok(Number.isNaN(median([])));
});
