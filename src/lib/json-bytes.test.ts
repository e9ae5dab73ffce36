import assert from 'node:assert/strict';
import { test } from 'node:test';
import { JsonBytes, jsonText } from './json-bytes.ts';
import { jsonNumberSamples } from '../../test/harness/json-numbers.ts';

const written = (write: (w: JsonBytes) => void, initial = 4): string => {
  const w = new JsonBytes(initial);
  write(w);
  return w.view().toString('utf8');
};

test('str writes exactly what JSON.stringify writes: escapes, quotes, backslashes, control characters, non-ASCII, lone surrogates', () => {
  const samples = [
    '', 'gpt-4o-mini', 'a"b', 'back\\slash', 'line\nbreak\ttab', '\u0000\u001f\u007f', 'café', '日本語', '😀 emoji',
    '\ud800 lone high', 'lone low \udc00', '</script>', 'x'.repeat(5000), `${'é'.repeat(3000)}"`,
  ];
  for (const s of samples) assert.equal(written((w) => w.str(s)), JSON.stringify(s), JSON.stringify(s).slice(0, 40));
  // Every one-unit string, one at a time.
  for (let c = 0; c < 0x10000; c += 7) {
    const s = `a${String.fromCharCode(c)}b`;
    assert.equal(written((w) => w.str(s)), JSON.stringify(s), `char ${c}`);
  }
});

test('num writes exactly what JSON.stringify writes: integers, whole microseconds in ms, other doubles, non-finite as null', () => {
  for (const v of jsonNumberSamples()) assert.equal(written((w) => w.num(v)), JSON.stringify(v), String(v));
});

test('constants, ASCII text, growth past the initial buffer, and reset', () => {
  const text = written((w) => {
    w.raw(jsonText('{"a":'));
    w.str('x');
    w.raw(jsonText(',"b":'));
    w.ascii('12');
    w.raw(jsonText(`,"long":"${'z'.repeat(200)}"}`));
  }, 1);
  assert.deepEqual(JSON.parse(text), { a: 'x', b: 12, long: 'z'.repeat(200) });
  const w = new JsonBytes(8);
  w.str('first');
  w.reset();
  w.str('second');
  assert.equal(w.view().toString(), '"second"', 'reset starts the text again');
});
