import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore } from './memory-store.ts';
import { msToWindowEnd, retryAfterSecs, windowStart } from './windows.ts';
import type { CounterCheck } from './store.ts';

const MINUTE = 60_000;
const T0 = 1_760_000_020_000; // 40 s into a minute

function clock(start: number) {
  const c = { now: start, fn: () => c.now };
  return c;
}

const rpm = (max: number, key = 'b:r:60'): CounterCheck => ({ key, kind: 'requests', windowSecs: 60, max });
const tpm = (max: number, key = 'b:t:60'): CounterCheck => ({ key, kind: 'tokens', windowSecs: 60, max });

test('windows are wall-clock aligned: start = now - now % window', () => {
  assert.equal(windowStart(T0, 60), T0 - 40_000);
  assert.equal(windowStart(T0 - 40_000, 60), T0 - 40_000);
  assert.equal(msToWindowEnd(T0, 60), 20_000);
  assert.equal(msToWindowEnd(T0 - 40_000, 60), MINUTE);
  assert.equal(retryAfterSecs(19_001), 20);
  assert.equal(retryAfterSecs(1), 1);
  assert.equal(retryAfterSecs(0), 1);
});

test('a request counter admits up to its cap within a window, then refuses', () => {
  const c = clock(T0);
  const s = new MemoryStore(c.fn);
  for (let i = 1; i <= 3; i++) {
    const o = s.admit([rpm(3)], [], '');
    assert.equal(o.failed, -1);
    assert.equal(o.used[0], i);
    assert.equal(o.resetMs[0], 20_000);
  }
  assert.equal(s.admit([rpm(3)], [], '').failed, 0);
});

test('the count starts over exactly at the window edge, not 60 s after the first request', () => {
  const c = clock(T0);
  const s = new MemoryStore(c.fn);
  s.admit([rpm(1)], [], '');
  c.now = T0 + 19_999; // last millisecond of the window
  assert.equal(s.admit([rpm(1)], [], '').failed, 0);
  c.now = T0 + 20_000; // first millisecond of the next one
  assert.equal(s.admit([rpm(1)], [], '').failed, -1);
});

test('a refusal increments nothing: every counter of the admission is all-or-nothing', () => {
  const s = new MemoryStore(clock(T0).fn);
  const wide = rpm(10, 'key:r:60');
  const narrow = rpm(1, 'model:r:60');
  assert.equal(s.admit([wide, narrow], [], '').failed, -1);
  assert.equal(s.admit([wide, narrow], [], '').failed, 1);
  assert.equal(s.admit([wide, narrow], [], '').failed, 1);
  // The wide counter only counted the admitted request.
  assert.equal(s.admit([wide], [], '').used[0], 2);
});

test('token counters are checked, not incremented, and refuse once exhausted', () => {
  const s = new MemoryStore(clock(T0).fn);
  assert.equal(s.admit([tpm(100)], [], '').used[0], 0);
  s.charge([tpm(100)], 60);
  assert.equal(s.admit([tpm(100)], [], '').failed, -1);
  s.charge([tpm(100)], 40);
  const o = s.admit([tpm(100)], [], '');
  assert.equal(o.failed, 0);
  assert.equal(o.used[0], 100);
});

test('concurrency slots are held per lease until released', () => {
  const s = new MemoryStore(clock(T0).fn);
  const slot = { key: 'b:conc', max: 2 };
  assert.deepEqual(s.admit([], [slot], 'a').held, [1]);
  assert.deepEqual(s.admit([], [slot], 'b').held, [2]);
  const refused = s.admit([rpm(5)], [slot], 'c');
  assert.equal(refused.failed, 1);
  // The request counter was not charged for the refused request.
  assert.equal(s.admit([rpm(5)], [], '').used[0], 1);
  assert.equal(s.renew(['b:conc'], 'a'), true);
  s.release(['b:conc'], 'a');
  assert.equal(s.renew(['b:conc'], 'a'), false);
  assert.equal(s.admit([], [slot], 'c').failed, -1);
});

test('the sweep drops counters whose window ended', () => {
  const c = clock(T0);
  const s = new MemoryStore(c.fn);
  s.admit([rpm(5), { key: 'x:r:3600', kind: 'requests', windowSecs: 3600, max: 5 }], [], '');
  c.now = T0 + MINUTE;
  s.sweep();
  assert.equal(s.size.cells, 1);
});
