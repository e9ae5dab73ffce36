import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isValidRequestId, requestIdFrom } from './request-id.ts';

test('adopts the first well-formed id from the accepted headers, in order', () => {
  assert.equal(requestIdFrom({ 'x-b': 'bee', 'x-a': 'ay' }, ['x-a', 'x-b']), 'ay');
  assert.equal(requestIdFrom({ 'x-a': 'has space', 'x-b': 'bee' }, ['x-a', 'x-b']), 'bee');
});

test('mints a UUID when nothing acceptable is present', () => {
  const id = requestIdFrom({ 'x-other': 'abc' }, ['x-tollgate-request-id']);
  assert.match(id, /^[0-9a-f-]{36}$/);
});

test('rejects empty, overlong and non-visible ids', () => {
  assert.equal(isValidRequestId(''), false);
  assert.equal(isValidRequestId('a'.repeat(257)), false);
  assert.equal(isValidRequestId('a'.repeat(256)), true);
  assert.equal(isValidRequestId('tab\tid'), false);
  assert.equal(isValidRequestId('é'), false);
});
