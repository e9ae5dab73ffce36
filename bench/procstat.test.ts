import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { coreBusyBetween, coreMicrosBetween, parseCoreTimes, parseStat, processTree, threadCpuMicros, treeCpuMicros, treePeakRssBytes } from './procstat.ts';

test('parseStat finds fields after a command name holding spaces and parentheses', () => {
  const rest = 'S 42 1 1 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 7 0 123 456789 1234';
  const s = parseStat(`1234 (node (x) y) ${rest}`);
  assert.deepEqual(s, { pid: 1234, ppid: 42, cpuTicks: 325 });
});

test('parseCoreTimes and coreBusyBetween compute per-core busy fractions', () => {
  const a = parseCoreTimes('cpu  1 1 1 1\ncpu0 100 0 50 800 50 0 0 0 0 0\ncpu1 10 0 10 980 0 0 0 0 0 0\n');
  // cpu0 also spent 40 jiffies in softirq: busy, but charged to no process.
  const b = parseCoreTimes('cpu  1 1 1 1\ncpu0 150 0 100 800 50 0 40 0 0 0\ncpu1 20 0 10 1070 0 0 0 0 0 0\n');
  assert.deepEqual(coreBusyBetween(a, b), [1, 0.1]);
  assert.equal(a.busy.length, 2, 'the aggregate "cpu" line is not a core');
  const ratio = coreMicrosBetween(a, b, 'process') / coreMicrosBetween(a, b, 'busy');
  assert.equal(ratio, 110 / 150);
  assert.equal(coreMicrosBetween(a, b, 'steal'), 0);
});

test('processTree includes children, treeCpuMicros and peak RSS read the live process', async () => {
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 3000)'], { stdio: 'ignore' });
  try {
    await new Promise((r) => setTimeout(r, 200));
    const pids = processTree(process.pid).map((s) => s.pid);
    assert.ok(pids.includes(process.pid));
    assert.ok(pids.includes(child.pid!));
    assert.ok(!processTree(child.pid!).some((s) => s.pid === process.pid), 'a parent is not in its child\'s tree');
    assert.ok(treeCpuMicros(process.pid) > 0);
    assert.ok(treePeakRssBytes(process.pid) > treePeakRssBytes(child.pid!));
  } finally {
    child.kill();
  }
});

test('threadCpuMicros sums CPU by thread name; the busy main thread shows its work', () => {
  const before = threadCpuMicros(process.pid);
  const until = Date.now() + 150;
  while (Date.now() < until); // burn CPU on this (the main) thread
  const after = threadCpuMicros(process.pid);
  const main = readFileSync(`/proc/${process.pid}/comm`, 'utf8').trim();
  assert.ok(after.has(main), `thread names: ${[...after.keys()].join(', ')}`);
  assert.ok(after.get(main)! - (before.get(main) ?? 0) >= 50_000, 'at least 50 ms of the 150 ms loop is counted');
  assert.equal(threadCpuMicros(2 ** 22 + 1).size, 0, 'a process that does not exist has no threads');
});
