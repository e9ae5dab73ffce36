import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bucketErrors } from './buckets.ts';

test('bucket lists must be non-empty, positive and strictly ascending', () => {
  assert.deepEqual(bucketErrors('b', [0.1, 1]), []);
  assert.deepEqual(bucketErrors('b', []), ['b: must list at least one bucket']);
  assert.deepEqual(bucketErrors('b', [1, 1]), ['b: must be strictly ascending (1 then 1)']);
  assert.deepEqual(bucketErrors('b', [1, Infinity]), ['b[1]: must be a finite number > 0']);
});
