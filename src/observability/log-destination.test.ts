import test from 'node:test';
import assert from 'node:assert/strict';
import { LineBatcher } from './log-destination.ts';

function recorder() {
  const writes: string[] = [];
  let flushes = 0;
  let syncs = 0;
  return {
    writes,
    get flushes() {
      return flushes;
    },
    get syncs() {
      return syncs;
    },
    sink: {
      write: (b: Buffer) => writes.push(b.toString('utf8')),
      flush: (cb: (err?: Error) => void) => {
        flushes++;
        cb();
      },
      flushSync: () => {
        syncs++;
      },
    },
  };
}

test('LineBatcher holds lines until the batch size, then writes them as one chunk, in order', () => {
  const r = recorder();
  const b = new LineBatcher(r.sink, 10);
  b.write('aaaa\n');
  b.write('bbb\n');
  assert.deepEqual(r.writes, []);
  b.write('cc\n');
  assert.deepEqual(r.writes, ['aaaa\nbbb\ncc\n']);
  b.write('d\n');
  assert.deepEqual(r.writes, ['aaaa\nbbb\ncc\n']);
});

test('LineBatcher.flush hands a partial batch to the sink and flushes it; an empty flush writes nothing', () => {
  const r = recorder();
  const b = new LineBatcher(r.sink, 1000);
  let called = false;
  b.flush(() => {
    called = true;
  });
  assert.deepEqual(r.writes, []);
  assert.equal(called, true);
  b.write('x\n');
  b.flush();
  assert.deepEqual(r.writes, ['x\n']);
  assert.equal(r.flushes, 2);
});

test('LineBatcher.flushSync writes what is pending and never throws at exit', () => {
  const r = recorder();
  const b = new LineBatcher(r.sink, 1000);
  b.write('last words\n');
  b.flushSync();
  assert.deepEqual(r.writes, ['last words\n']);
  assert.equal(r.syncs, 1);
  const broken = new LineBatcher({ write: () => {}, flushSync: () => { throw new Error('EBADF'); } }, 10);
  broken.write('x');
  assert.doesNotThrow(() => broken.flushSync());
});
