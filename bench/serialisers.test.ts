import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serialiserCases } from './serialisers.ts';

test('every serialiser case runs, and the hand-written usage line is as long as JSON.stringify\'s', () => {
  const cases = serialiserCases();
  assert.deepEqual(Object.keys(cases).sort(), ['access-report', 'access-report-unkept', 'date-iso', 'iso-time', 'span', 'span-unkept', 'usage-line', 'usage-line-unkept', 'usage-stringify']);
  for (const [name, fn] of Object.entries(cases)) for (let i = 0; i < 3; i++) assert.ok(fn(i) > 20, name);
  for (let i = 0; i < 5; i++) assert.equal(cases['usage-line'](i), cases['usage-stringify'](i));
  assert.equal(cases['iso-time'](0), cases['date-iso'](0));
});
