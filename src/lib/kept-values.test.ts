import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KeptValues } from './kept-values.ts';

interface Rec {
  who: string;
  n: number;
}

function kept(size: number): { memo: KeptValues<Rec, string, string>; made: string[] } {
  const made: string[] = [];
  const memo = new KeptValues<Rec, string, string>(size, (k, r) => k === r.who, (r) => r.who, (r) => {
    made.push(r.who);
    return `text of ${r.who}`;
  });
  return { memo, made };
}

test('a value is made once per key and returned for every record with that key', () => {
  const { memo, made } = kept(4);
  for (let n = 0; n < 5; n++) for (const who of ['a', 'b', 'c']) assert.equal(memo.get({ who, n }), `text of ${who}`);
  assert.deepEqual(made, ['a', 'b', 'c']);
});

test('beyond its size, the oldest kept value makes room; the others stay', () => {
  const { memo, made } = kept(2);
  memo.get({ who: 'a', n: 0 });
  memo.get({ who: 'b', n: 0 });
  memo.get({ who: 'c', n: 0 }); // replaces a
  memo.get({ who: 'b', n: 1 });
  memo.get({ who: 'c', n: 1 });
  assert.deepEqual(made, ['a', 'b', 'c']);
  assert.equal(memo.get({ who: 'a', n: 1 }), 'text of a'); // made again, replacing b
  assert.deepEqual(made, ['a', 'b', 'c', 'a']);
  memo.get({ who: 'c', n: 2 });
  assert.deepEqual(made, ['a', 'b', 'c', 'a']);
});

test('the key is what keyOf copied: a record changed after it was seen is compared by its new values', () => {
  const { memo, made } = kept(2);
  const r = { who: 'a', n: 0 };
  memo.get(r);
  r.who = 'z';
  assert.equal(memo.get(r), 'text of z');
  assert.deepEqual(made, ['a', 'z']);
});
