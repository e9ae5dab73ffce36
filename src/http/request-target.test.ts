import { test } from 'node:test';
import assert from 'node:assert/strict';
import { originForm } from './request-target.ts';

test('origin form is kept; absolute form becomes its path and query', () => {
  assert.equal(originForm('/v1/models?x=1'), '/v1/models?x=1');
  assert.equal(originForm('http://gw:3000/v1/models'), '/v1/models');
  assert.equal(originForm('HTTPS://gw/v1/chat/completions?a=b'), '/v1/chat/completions?a=b');
  assert.equal(originForm('http://gw'), '/');
  assert.equal(originForm('http://gw?q=1'), '/?q=1');
  assert.equal(originForm('*'), '*');
});
