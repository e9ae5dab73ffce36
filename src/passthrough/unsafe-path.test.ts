import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isUnsafePath } from './unsafe-path.ts';

test('dot segments in every spelling are unsafe', () => {
  for (const p of [
    '/p/../secret', '/p/./x', '/p/..', '/..', '/p/%2e%2e/x', '/p/%2E%2e/x', '/p/.%2e/x', '/p/%252e%252e/x',
    '/p/..%2fsecret', '/p/..%5csecret', '/p\\..\\secret', '/p/..;x/y', '/p/%2e', '/p/%00x',
  ]) {
    assert.equal(isUnsafePath(p), true, p);
  }
});

test('dots inside names are safe', () => {
  for (const p of ['/p/file.jsonl', '/p/v1.2/x', '/p/...', '/p/.well-known/x', '/p/a..b', '/p/%2e%2e%2e', '/', '/p/x%20y']) {
    assert.equal(isUnsafePath(p), false, p);
  }
});
