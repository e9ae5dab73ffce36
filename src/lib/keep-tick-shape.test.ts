import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Runs a child that schedules a tick and then collects garbage fully, `rounds` times (each time
 * with no tick record alive), under V8's map log; returns how many times V8 made a new map for a
 * record's first key (`async_id_symbol`), i.e. how many times the records' shapes were rebuilt.
 */
function tickShapesMade(keep: boolean, rounds: number): number {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-tick-shape-'));
  try {
    const log = join(dir, 'v8.log');
    const mod = new URL('./keep-tick-shape.ts', import.meta.url).href;
    const script = `const { keepTickShape } = await import(${JSON.stringify(mod)});
if (${keep}) await keepTickShape();
for (let i = 0; i < ${rounds}; i++) {
  await new Promise((r) => process.nextTick(r));
  await new Promise((r) => setImmediate(r));
  globalThis.gc();
}`;
    execFileSync(process.execPath, ['--expose-gc', '--log-maps', `--logfile=${log}`, '--no-logfile-per-isolate', '--input-type=module', '-e', script], { stdio: 'ignore' });
    return readFileSync(log, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('map,Transition,') && l.includes('"async_id_symbol"')).length;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// The problem itself, on the pinned Node: should an upgrade make this fail, V8 keeps the shapes
// on its own and keep-tick-shape.ts can go.
test('without a kept record, every full collection makes nextTick rebuild its records\' shapes (what keepTickShape prevents)', () => {
  assert.ok(tickShapesMade(false, 5) >= 5);
});

test('keepTickShape: the records keep one shape through full collections', () => {
  assert.equal(tickShapesMade(true, 5), 1);
});

test('keepTickShape resolves at once when a record is already kept', async () => {
  const { keepTickShape } = await import('./keep-tick-shape.ts');
  await keepTickShape();
  let resolved = false;
  const p = keepTickShape().then(() => (resolved = true));
  // A fresh keep waits for a tick; a kept one is settled before any tick runs.
  await Promise.resolve();
  assert.equal(resolved, true);
  await p;
});
