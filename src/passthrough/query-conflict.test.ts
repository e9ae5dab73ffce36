import { test } from 'node:test';
import assert from 'node:assert/strict';
import { conflictingQueryKey, targetQueryKeys } from './query-conflict.ts';

const keys = targetQueryKeys('api-version=2024-10-21&tenant=acme');

test('target keys are decoded and lowercased', () => {
  assert.deepEqual([...targetQueryKeys('a%2Db=1&C=2&c=3')], ['a-b', 'c']);
});

test('a target query splits on ";" as a caller query does', () => {
  assert.deepEqual([...targetQueryKeys('a=1;api-version=2&flag')], ['a', 'api-version', 'flag']);
  assert.equal(conflictingQueryKey(targetQueryKeys('a=1;api-version=2'), 'api-version=3'), 'api-version');
});

test('a caller key equal to a target key conflicts, in any spelling', () => {
  for (const q of [
    'api-version=2025', 'limit=3&api-version=x', 'api%2Dversion=x', 'api%252Dversion=x', 'API-Version=x', 'tenant',
    'x=1%26api-version%3D2', 'x=1%3Btenant=evil', 'x=1;tenant=evil', 'x=%2526tenant%253Devil',
  ]) {
    assert.ok(conflictingQueryKey(keys, q) !== undefined, q);
  }
  assert.equal(conflictingQueryKey(keys, 'x=1%26api-version%3D2'), 'api-version');
});

test('other keys pass; nothing conflicts without a target query', () => {
  assert.equal(conflictingQueryKey(keys, 'limit=3&after=file-1&q=api-version'), undefined);
  assert.equal(conflictingQueryKey(keys, ''), undefined);
  assert.equal(conflictingQueryKey(new Set(), 'api-version=1'), undefined);
});
