import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jsonList, jsonMap, jsonNumber, jsonString, jsonStringOrNull } from './json-text.ts';
import { jsonNumberSamples } from '../../test/harness/json-numbers.ts';

test('each piece is the text JSON.stringify writes for its value', () => {
  const strings = ['', 'gpt-4o-mini', 'a"b', 'back\\slash', 'line\nbreak', '\u0000\u001f\u007f', 'café', '😀', '\ud800 lone', '~ ! # [ ] { }'];
  for (const s of strings) assert.equal(jsonString(s), JSON.stringify(s), JSON.stringify(s));
  for (let c = 0; c < 0x10000; c += 3) {
    const s = `a${String.fromCharCode(c)}b`;
    assert.equal(jsonString(s), JSON.stringify(s), `char ${c}`);
  }
  assert.equal(jsonStringOrNull(null), 'null');
  assert.equal(jsonStringOrNull(undefined), 'null');
  assert.equal(jsonStringOrNull('x"'), JSON.stringify('x"'));
  for (const v of jsonNumberSamples()) assert.equal(jsonNumber(v), JSON.stringify(v), String(v));
  for (const v of [null, undefined]) assert.equal(jsonNumber(v), 'null', String(v));
  assert.equal(jsonList([]), '[]');
  assert.equal(jsonList([{ a: 'é"' }]), JSON.stringify([{ a: 'é"' }]));
  assert.equal(jsonMap({}), '{}');
  assert.equal(jsonMap({ 'x-team': 'blue' }), JSON.stringify({ 'x-team': 'blue' }));
});
