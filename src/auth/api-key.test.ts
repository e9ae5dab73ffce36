import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hashKey, presentedKey } from './api-key.ts';

test('reads Bearer, bare Authorization and x-api-key, Bearer preferred', () => {
  assert.equal(presentedKey({ authorization: 'Bearer sk-1' }), 'sk-1');
  assert.equal(presentedKey({ authorization: 'bearer   sk-1 ' }), 'sk-1');
  assert.equal(presentedKey({ authorization: 'sk-bare' }), 'sk-bare');
  assert.equal(presentedKey({ 'x-api-key': 'sk-x' }), 'sk-x');
  assert.equal(presentedKey({ authorization: 'Bearer sk-a', 'x-api-key': 'sk-x' }), 'sk-a');
});

test('absent or empty credentials read as missing', () => {
  assert.equal(presentedKey({}), undefined);
  assert.equal(presentedKey({ authorization: '' }), undefined);
  assert.equal(presentedKey({ authorization: 'Bearer ' }), undefined);
  assert.equal(presentedKey({ authorization: 'Bearer' }), undefined);
  assert.equal(presentedKey({ 'x-api-key': ' ' }), undefined);
  assert.equal(presentedKey({ authorization: 'Bearer ', 'x-api-key': 'sk-x' }), 'sk-x');
});

test('hash is lowercase hex SHA-256', () => {
  assert.equal(hashKey('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
});
