import test from 'node:test';
import assert from 'node:assert/strict';
import { IdleTimer } from './idle-timer.ts';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

test('IdleTimer fires once after ms without a re-arm', async () => {
  let fired = 0;
  const t = new IdleTimer(30, () => fired++);
  t.arm();
  await sleep(80);
  assert.equal(fired, 1);
});

test('IdleTimer: each arm restarts the clock, so steady chunks never fire it', async () => {
  let fired = 0;
  const t = new IdleTimer(60, () => fired++);
  t.arm();
  for (let i = 0; i < 6; i++) {
    await sleep(20);
    t.arm();
  }
  assert.equal(fired, 0);
  t.stop();
  await sleep(90);
  assert.equal(fired, 0, 'stopped: never fires');
  t.arm();
  await sleep(90);
  assert.equal(fired, 1, 'armed again after stop');
});

test('IdleTimer with ms <= 0 never runs', async () => {
  let fired = 0;
  const t = new IdleTimer(0, () => fired++);
  t.arm();
  await sleep(20);
  assert.equal(fired, 0);
});
