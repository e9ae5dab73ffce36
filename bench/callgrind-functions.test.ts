import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addCallEdges, addCosts, callEdges, callersOf, functionName, largestDifferences, PerfMap, selfCostByFunction, symbolize } from './callgrind-functions.ts';

const DUMP = `# callgrind format
events: Ir
summary: 124

ob=(1) /bin/node
fl=(1) ???
fn=(1) main
0 10
cfn=(2) helper
calls=1 0
0 100
fn=(2)
0 60
+2 40
fn=(3) 0x0000000000001010
0 7
fn=(4) 0x0000000000002000'2
0 5
fn=(5) 0x0000000000009000
0 2
fn=(1)
0 3
totals: 227
`;

test('selfCostByFunction: own lines only (a call line carries the callee\'s inclusive cost), compressed names resolved', () => {
  assert.deepEqual(
    [...selfCostByFunction(DUMP)],
    [
      ['main', 13],
      ['helper', 100],
      ['0x0000000000001010', 7],
      ["0x0000000000002000'2", 5],
      ['0x0000000000009000', 2],
    ],
  );
});

test('symbolize: JIT addresses named from the perf map (a later entry for the same code wins), unknown code pooled', () => {
  const map = new PerfMap("1000 10 JS:*'f file:///a.ts:1:1\n2000 10 JS:~'g file:///b.ts:2:2\n1000 20 JS:*'f file:///a.ts:1:1 (again)\nnot a line\n");
  assert.equal(map.nameAt(0x1010), "*'f file:///a.ts:1:1 (again)");
  assert.equal(map.nameAt(0x2010), undefined, 'past the end of g');
  assert.equal(map.nameAt(0x0fff), undefined);
  assert.deepEqual(
    [...symbolize(selfCostByFunction(DUMP), map)],
    [
      ['main', 13],
      ['helper', 100],
      ["*'f file:///a.ts:1:1 (again)", 7],
      ["~'g file:///b.ts:2:2", 5],
      ['(JIT code)', 2],
    ],
  );
});

test('largestDifferences: per request, largest change either way first', () => {
  const base = addCosts([new Map([['a', 100], ['b', 50]]), new Map([['a', 100]])]);
  const target = new Map([['a', 100], ['b', 450], ['c', 300]]);
  assert.deepEqual(largestDifferences(base, 2, target, 1, 2), [
    { name: 'b', base: 25, target: 450 },
    { name: 'c', base: 0, target: 300 },
  ]);
  assert.deepEqual(largestDifferences(base, 2, target, 1, 5).map((d) => d.name), ['b', 'c', 'a']);
});

test('functionName: paths under the given roots written relative to them', () => {
  const map = new PerfMap("1000 10 JS:*'f file:///tmp/base/src/a.ts:1:1\n2000 10 JS:*'g /work/main/node_modules/x/y.js:2:2\n");
  const roots = ['/tmp/base', '/work/main'];
  assert.equal(functionName('0x0000000000001000', map, roots), "*'f src/a.ts:1:1");
  assert.equal(functionName('0x0000000000002004', map, roots), "*'g node_modules/x/y.js:2:2");
  assert.equal(functionName('0x0000000000001000', map), "*'f file:///tmp/base/src/a.ts:1:1", 'no roots: as the map names it');
  assert.equal(functionName('Builtins_StringAdd_CheckNone', map, roots), 'Builtins_StringAdd_CheckNone');
  assert.deepEqual([...symbolize(new Map([['0x0000000000001000', 3], ['0x0000000000001008', 4]]), map, roots)], [["*'f src/a.ts:1:1", 7]]);
});

// main calls helper twice from two lines; helper and a JIT function call builtin X.
const CALLS = `events: Ir
fn=(1) main
0 10
cfn=(2) helper
calls=2 0
0 100
+1 5
cfn=(2)
calls=1 0
0 40
fn=(2)
0 30
cfn=(3) Builtins_X
calls=3 0
0 90
fn=(4) 0x0000000000001000
0 1
cfn=(3)
calls=5 0
0 200
`;

test('callEdges and callersOf: the calls to a function and their inclusive cost, by caller, JIT callers named', () => {
  const edges = callEdges(CALLS);
  assert.deepEqual(edges.get('helper')?.get('main'), { cost: 140, calls: 3 });
  const map = new PerfMap("1000 10 JS:*'jitted file:///a.ts:1:1\n");
  const name = (raw: string): string => functionName(raw, map);
  assert.deepEqual(callersOf(edges, /^Builtins_X$/, name), [
    ["*'jitted file:///a.ts:1:1", { cost: 200, calls: 5 }],
    ['helper', { cost: 90, calls: 3 }],
  ]);
  assert.deepEqual(callersOf(edges, /helper|Builtins_X/, name).map(([caller]) => caller), ["*'jitted file:///a.ts:1:1", 'main', 'helper']);
  assert.deepEqual(callersOf(edges, /nothing/, name), []);
  // Batches add up; the call lines' costs never count as their caller's own.
  assert.deepEqual(callersOf(addCallEdges([edges, edges]), /^helper$/, name), [['main', { cost: 280, calls: 6 }]]);
  assert.deepEqual([...selfCostByFunction(CALLS)], [['main', 15], ['helper', 30], ['0x0000000000001000', 1]]);
});
