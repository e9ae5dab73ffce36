import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callgrindTotal, dumpFiles, parseInstrArgs, treeRoots } from './instructions.ts';

test('parseInstrArgs: defaults, targets, and a bad value named by its option', () => {
  const o = parseInstrArgs(['tollgate@/tmp/base', 'tollgate']);
  assert.deepEqual([o.requests, o.warm, o.batches, o.concurrency, o.sse, o.functions], [1000, 3000, 3, 8, false, 0]);
  assert.deepEqual(
    o.targets.map((t) => [t.config, t.repo]),
    [
      ['tollgate', '/tmp/base'],
      ['tollgate', o.targets[1].repo],
    ],
  );
  assert.equal(parseInstrArgs(['--sse', '--requests', '50', 'minimal']).requests, 50);
  assert.equal(parseInstrArgs(['--functions', '40', 'minimal', 'tollgate']).functions, 40);
  assert.throws(() => parseInstrArgs(['--functions', 'all', 'minimal']), /--functions: must be an integer in \[0, 1000\], got all/);
  assert.throws(() => parseInstrArgs(['--batches', '0', 'minimal']), /--batches: must be an integer in \[1, 100\], got 0/);
  assert.throws(() => parseInstrArgs([]), /name at least one target/);
  assert.equal(o.callers, undefined);
  assert.equal(parseInstrArgs(['--callers', 'nextTick|CEntry', 'tollgate']).callers?.source, 'nextTick|CEntry');
  assert.throws(() => parseInstrArgs(['--callers', '(', 'tollgate']), /--callers: Invalid regular expression/);
  assert.throws(() => parseInstrArgs(['--callers', '', 'tollgate']), /--callers: expected a regular expression/);
});

test('treeRoots: a tree, and the tree its node_modules link leads to', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-roots-'));
  try {
    const main = join(dir, 'main');
    const worktree = join(dir, 'worktree-b');
    mkdirSync(join(main, 'node_modules'), { recursive: true });
    mkdirSync(worktree);
    symlinkSync(join(main, 'node_modules'), join(worktree, 'node_modules'));
    assert.deepEqual(treeRoots(main), [main]);
    assert.deepEqual(treeRoots(worktree), [worktree, main]);
    assert.deepEqual(treeRoots(join(dir, 'none')), [join(dir, 'none')]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('callgrindTotal: the summary line, else the totals line', () => {
  assert.equal(callgrindTotal('version: 1\nevents: Ir\nsummary: 589372100\n\nfn=main\n1 5\ntotals: 589372895\n'), 589372100);
  assert.equal(callgrindTotal('events: Ir\nfn=x\n1 2\ntotals: 42\n'), 42);
  assert.throws(() => callgrindTotal('events: Ir\n'), /without a summary or totals line/);
});

test('dumpFiles: the per-thread files of one dump of one process, by thread', () => {
  const names = ['cg.10.1-01', 'cg.10.1-02', 'cg.10.2-01', 'cg.10.2-03', 'cg.11.2-01', 'cg.10.12-01', 'other'];
  assert.deepEqual([...dumpFiles(names, 'cg', 10, 2)], [
    [1, 'cg.10.2-01'],
    [3, 'cg.10.2-03'],
  ]);
  assert.deepEqual([...dumpFiles(names, 'cg', 10, 1).keys()], [1, 2]);
  assert.equal(dumpFiles(names, 'cg', 10, 3).size, 0);
});
