import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createReloader } from './reload.ts';
import type { LoadResult } from '../resources/loader.ts';

/** A reloader whose loads wait for the test to settle them (`gates`); results recorded as counts, -1 for a failure. */
function gatedReloader() {
  const gates: Array<(r: LoadResult) => void> = [];
  const results: number[] = [];
  const reloader = createReloader(
    'f',
    (r) => results.push(r.ok ? r.count : -1),
    () => new Promise<LoadResult>((resolve) => gates.push(resolve)),
  );
  return { gates, results, reloader };
}

test('requests during a load are coalesced into one more load, results in order', async () => {
  const { gates, results, reloader } = gatedReloader();
  let n = 0;
  reloader.request();
  reloader.request();
  reloader.request();
  assert.equal(gates.length, 1, 'one load at a time');
  gates[0]({ ok: true, resources: {} as never, count: ++n });
  await new Promise((r) => setImmediate(r));
  assert.equal(gates.length, 2, 'the requests made during the first load lead to exactly one more');
  gates[1]({ ok: true, resources: {} as never, count: ++n });
  await reloader.idle();
  assert.deepEqual(results, [1, 2]);
  reloader.request();
  assert.equal(gates.length, 3, 'an idle reloader starts a load at once');
  gates[2]({ ok: false, errors: ['x'] });
  await reloader.idle();
  assert.deepEqual(results, [1, 2, -1]);
});

test('closed: a pending reload does not run, later requests start none, the running load still reports', async () => {
  const { gates, results, reloader } = gatedReloader();
  reloader.request();
  reloader.request();
  reloader.close();
  reloader.request();
  gates[0]({ ok: true, resources: {} as never, count: 1 });
  await reloader.idle();
  assert.deepEqual(results, [1]);
  assert.equal(gates.length, 1, 'no load after close');
  reloader.request();
  await reloader.idle();
  assert.equal(gates.length, 1);
});
