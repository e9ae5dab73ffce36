import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeFully } from './percent-decode.ts';

test('every encoding layer is removed; malformed escapes stay as written', () => {
  assert.equal(decodeFully('%2e%2E'), '..');
  assert.equal(decodeFully('%252e%252e'), '..');
  assert.equal(decodeFully('%25252e'), '.');
  assert.equal(decodeFully('100%'), '100%');
  assert.equal(decodeFully('%zz%2e'), '%zz.');
  assert.equal(decodeFully('%C3%A9'), 'é');
  assert.equal(decodeFully('a+b', true), 'a b');
  assert.equal(decodeFully('a+b'), 'a+b');
});
