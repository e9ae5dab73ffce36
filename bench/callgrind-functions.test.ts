import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addCosts, largestDifferences, PerfMap, selfCostByFunction, symbolize } from './callgrind-functions.ts';

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
