import assert from 'node:assert/strict';
import { test } from 'node:test';
import { JsonBytes, jsonText } from './json-bytes.ts';

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
  const samples = [
    0, -0, 1, 9, 10, 99, 100, 12345, -7, -12345, 2 ** 31, 2 ** 53 - 1, -(2 ** 53 - 1), 2 ** 53, -(2 ** 53), 2 ** 53 + 2, 1e15, 1e15 - 1, 1763784306789000, 1e16, 1e21, 1e22, -1e21,
    0.1, 0.001, 0.009, 0.01, 1.5, 1.25, 1.125, 12.345, -0.5, -12.345, 1234567.891, 999999999999.999,
    1e-7, 5e-324, Math.PI, 0.1 + 0.2, 1 / 3, 123.4567, NaN, Infinity, -Infinity, Number.MAX_VALUE,
  ];
  for (const v of samples) assert.equal(written((w) => w.num(v)), JSON.stringify(v), String(v));
  let seed = 42;
  const random = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  for (let i = 0; i < 20000; i++) {
    const scale = 10 ** Math.floor(random() * 12);
    const micros = Math.round(random() * scale) / 1000; // as roundMs stores a duration
    const sign = random() < 0.2 ? -1 : 1;
    const any = (random() - 0.5) * 10 ** (Math.floor(random() * 40) - 20);
    for (const v of [sign * micros, any, Math.round(any)]) assert.equal(written((w) => w.num(v)), JSON.stringify(v), String(v));
  }
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
