import { test } from 'node:test';
import assert from 'node:assert/strict';
import { boundedIdentity } from './client-identity.ts';

test('identities lose control characters, are trimmed and bounded to 256 characters', () => {
  assert.equal(boundedIdentity('employee-42'), 'employee-42');
  assert.equal(boundedIdentity(' a\u0000b\r\nc\u007f '), 'abc');
  assert.equal(boundedIdentity('x'.repeat(1000))?.length, 256);
  assert.equal(boundedIdentity(['first', 'second']), 'first');
});

test('absent or empty identities record nothing', () => {
  assert.equal(boundedIdentity(undefined), null);
  assert.equal(boundedIdentity('   '), null);
  assert.equal(boundedIdentity('\u0001'), null);
});
