import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PerformanceObserver, constants } from 'node:perf_hooks';
import { collectGarbage } from './collect-garbage.ts';

test('collectGarbage runs a full (mark-compact) collection without --expose-gc', async () => {
  assert.equal((globalThis as { gc?: unknown }).gc, undefined, 'this test runs without --expose-gc');
  const kinds: number[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) kinds.push((e as unknown as { detail: { kind: number } }).detail.kind);
  });
  observer.observe({ entryTypes: ['gc'] });
  let collected = false;
  const registry = new FinalizationRegistry(() => (collected = true));
  (() => registry.register({ big: new Array(1000).fill('x') }, 'garbage'))();
  collectGarbage();
  // GC entries and finalizers are delivered asynchronously.
  await new Promise((resolve) => setTimeout(resolve, 50));
  observer.disconnect();
  assert.ok(kinds.includes(constants.NODE_PERFORMANCE_GC_MAJOR), `a major GC ran: ${kinds.join(',')}`);
  assert.equal(collected, true, 'unreachable objects were collected');
  assert.equal((globalThis as { gc?: unknown }).gc, undefined, 'gc is not left exposed');
});
