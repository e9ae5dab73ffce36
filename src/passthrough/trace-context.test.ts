import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseTraceparent } from './trace-context.ts';

const VALID = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

test('a valid traceparent yields its trace id, parent id and flags', () => {
  assert.deepEqual(parseTraceparent(VALID), { traceId: '0af7651916cd43dd8448eb211c80319c', parentId: 'b7ad6b7169203331', flags: '01' });
  // A future version may append fields.
  assert.equal(parseTraceparent('01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra')?.traceId, '0af7651916cd43dd8448eb211c80319c');
});

test('invalid trace contexts are ignored', () => {
  for (const v of [
    undefined, '', 'garbage', VALID.toUpperCase(), `${VALID}-x`, 'ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    '00-00000000000000000000000000000000-b7ad6b7169203331-01', '00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01',
    '00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333-01', '01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01x',
  ]) {
    assert.equal(parseTraceparent(v), undefined, String(v));
  }
  assert.equal(parseTraceparent([VALID, VALID]), undefined);
});
