// Numbers for the test of the hand-written JSON number writer (json-text.ts): edge values, and a
// seeded random spread of durations in whole microseconds (as roundMs stores them), of any doubles
// and of integers, each to be written exactly as JSON.stringify writes it.

const EDGES: readonly number[] = [
  0, -0, 1, 9, 10, 99, 100, 12345, -7, -12345, 2 ** 31, 2 ** 53 - 1, -(2 ** 53 - 1), 2 ** 53, -(2 ** 53), 2 ** 53 + 2, 1e15, 1e15 - 1, 1763784306789000, 1e16, 1e21, 1e22, -1e21,
  0.1, 0.001, 0.009, 0.01, 1.5, 1.25, 1.125, 12.345, -0.5, -12.345, 1234567.891, 999999999999.999, 1e12 + 0.001, 1e15 + 0.5,
  1e-7, 5e-324, Math.PI, 0.1 + 0.2, 1 / 3, 123.4567, NaN, Infinity, -Infinity, Number.MAX_VALUE,
];

export function jsonNumberSamples(count = 20000): number[] {
  const out = [...EDGES];
  let seed = 42;
  const random = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  for (let i = 0; i < count; i++) {
    const scale = 10 ** Math.floor(random() * 12);
    const micros = Math.round(random() * scale) / 1000;
    const sign = random() < 0.2 ? -1 : 1;
    const any = (random() - 0.5) * 10 ** (Math.floor(random() * 40) - 20);
    out.push(sign * micros, any, Math.round(any));
  }
  return out;
}
