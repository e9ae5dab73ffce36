import { test } from 'node:test';
import assert from 'node:assert/strict';
import { waitAtMost } from './wait-at-most.ts';

test('ends when the work settles, and leaves no timer behind', async () => {
  const before = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  await waitAtMost(Promise.resolve(), 60_000);
  await waitAtMost(Promise.reject(new Error('x')), 60_000);
  assert.equal(process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length, before);
});

test('ends after the bound when the work never settles', async () => {
  const started = performance.now();
  await waitAtMost(new Promise(() => undefined), 30);
  assert.ok(performance.now() - started >= 25);
});
