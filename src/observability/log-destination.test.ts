import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, openSync, readFileSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LineBatcher, type LineBatcherOptions } from './log-destination.ts';

type Cb = (err: NodeJS.ErrnoException | null, written: number) => void;

/** A scripted descriptor: each write call is answered by the next scripted outcome (default: all written). */
function scripted(outcomes: Array<'all' | number | 'EAGAIN' | 'EPIPE'> = []) {
  const out: string[] = [];
  const sync: string[] = [];
  const pending: Array<() => void> = [];
  const write: LineBatcherOptions['write'] = (_fd, buffer, _o, length, _p, cb: Cb) => {
    const outcome = outcomes.shift() ?? 'all';
    pending.push(() => {
      if (outcome === 'EAGAIN' || outcome === 'EPIPE') return cb(Object.assign(new Error(outcome), { code: outcome }), 0);
      const n = outcome === 'all' ? length : outcome;
      out.push(buffer.subarray(0, n).toString('utf8'));
      cb(null, n);
    });
  };
  const writeSync = (_fd: number, buffer: Buffer): number => {
    sync.push(buffer.toString('utf8'));
    return buffer.length;
  };
  /** Complete the in-flight writes, as the thread pool would. */
  const settle = (): void => {
    while (pending.length > 0) pending.shift()!();
  };
  return { out, sync, write, writeSync, settle, get inFlight() { return pending.length; } };
}

test('lines wait for the batch size, then go out as one write, in order, one write at a time', () => {
  const d = scripted();
  const b = new LineBatcher(9, { batchBytes: 10, write: d.write, writeSync: d.writeSync });
  b.write('aaaa\n');
  b.write('bbb\n');
  assert.equal(d.inFlight, 0);
  b.write('cc\n');
  assert.equal(d.inFlight, 1);
  b.write('dddddddddd\n'); // a second full batch queues behind the write in flight
  assert.equal(d.inFlight, 1);
  d.settle();
  d.settle();
  assert.deepEqual(d.out, ['aaaa\nbbb\ncc\n', 'dddddddddd\n']);
});

test('a partial write continues with the rest; EAGAIN is retried; multi-byte text stays whole', async () => {
  const d = scripted([3, 'EAGAIN']);
  const b = new LineBatcher(9, { batchBytes: 1, retryMs: 1, write: d.write, writeSync: d.writeSync });
  b.write('héllo\n');
  d.settle(); // 3 bytes written: "hé"
  d.settle(); // EAGAIN
  await new Promise((r) => setTimeout(r, 20));
  d.settle();
  assert.equal(Buffer.concat(d.out.map((s) => Buffer.from(s))).toString(), 'héllo\n');
});

test('flush writes a partial batch and calls back once it is written', () => {
  const d = scripted();
  const b = new LineBatcher(9, { batchBytes: 1000, write: d.write, writeSync: d.writeSync });
  let done = 0;
  b.flush(() => done++);
  assert.equal(done, 1, 'nothing pending: at once');
  b.write('x\n');
  b.flush(() => done++);
  assert.equal(done, 1);
  d.settle();
  assert.equal(done, 2);
  assert.deepEqual(d.out, ['x\n']);
});

test('flushSync writes what is queued behind the write in flight, not that one again', () => {
  const d = scripted();
  const b = new LineBatcher(9, { batchBytes: 5, write: d.write, writeSync: d.writeSync });
  b.write('first\n'); // in flight
  b.write('second\n'); // queued
  b.write('tail'); // pending, below the batch size
  b.flushSync();
  assert.deepEqual(d.sync, ['second\n', 'tail']);
  d.settle();
  assert.deepEqual(d.out, ['first\n']);
});

test('a full queue drops whole batches, counts them, and says so ahead of the next lines', () => {
  const d = scripted();
  const dropped: Array<[number, string]> = [];
  const b = new LineBatcher(9, {
    batchBytes: 1,
    maxQueuedBytes: 30,
    write: d.write,
    writeSync: d.writeSync,
    onDropped: (n, reason) => dropped.push([n, reason]),
    dropNotice: (n) => `{"dropped_lines":${n}}\n`,
  });
  b.write(`${'x'.repeat(29)}\n`); // in flight (30 bytes queued)
  b.write('lost\n');
  assert.deepEqual(dropped, [[1, 'queue_full']]);
  d.settle();
  b.write('after\n');
  d.settle();
  d.settle();
  assert.equal(d.out[0], `${'x'.repeat(29)}\n`);
  const [note, after] = d.out.slice(1).join('').split('\n');
  assert.equal(JSON.parse(note).dropped_lines, 1);
  assert.equal(after, 'after');
});

test('written buffers are filled again: later batches carry only their own lines', () => {
  const d = scripted();
  const b = new LineBatcher(9, { batchBytes: 16, write: d.write, writeSync: d.writeSync });
  b.write('a-long-first-line-of-text\n');
  d.settle();
  b.write('b\n');
  b.flush();
  d.settle();
  b.write('c\n');
  b.flush();
  d.settle();
  assert.deepEqual(d.out, ['a-long-first-line-of-text\n', 'b\n', 'c\n']);
});

test('a line longer than a batch buffer goes out whole', () => {
  const d = scripted();
  const b = new LineBatcher(9, { batchBytes: 4, write: d.write, writeSync: d.writeSync });
  b.write('ab\n');
  const long = `${'é'.repeat(50)}\n`;
  b.write(long);
  d.settle();
  d.settle();
  assert.deepEqual(d.out, ['ab\n', long]);
});

test('a broken descriptor drops the queue instead of retrying forever', () => {
  const d = scripted(['EPIPE']);
  const b = new LineBatcher(9, { batchBytes: 1, write: d.write, writeSync: d.writeSync });
  b.write('a\n');
  b.write('b\n');
  d.settle();
  assert.equal(d.inFlight, 0);
  assert.deepEqual(d.out, []);
  b.write('c\n');
  d.settle();
  assert.deepEqual(d.out, ['c\n'], 'the log stream keeps trying');
});

test('with onError, a failed descriptor is reported once and later lines are dropped as write errors', () => {
  const d = scripted(['all', 'EPIPE']);
  const errors: string[] = [];
  const dropped: Array<[number, string]> = [];
  const b = new LineBatcher(9, {
    batchBytes: 1,
    write: d.write,
    writeSync: d.writeSync,
    onError: (e) => errors.push(e.code ?? ''),
    onDropped: (n, reason) => dropped.push([n, reason]),
  });
  b.write('a\n'); // in flight, written
  b.write('b\n'); // queued, then EPIPE
  b.write('c\n'); // queued behind it: lost with it
  d.settle();
  d.settle();
  b.write('d\n');
  assert.deepEqual(errors, ['EPIPE']);
  assert.deepEqual(dropped, [[2, 'write_error'], [1, 'write_error']]);
  assert.deepEqual(d.out, ['a\n']);
  assert.equal(d.inFlight, 0);
});

test('writes reach a real file descriptor through fs.write', async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'tollgate-log-')), 'out.log');
  const fd = openSync(path, 'w');
  const b = new LineBatcher(fd, { batchBytes: 64 });
  for (let i = 0; i < 100; i++) b.write(`{"n":${i}}\n`);
  await new Promise<void>((resolve) => b.flush(() => resolve()));
  closeSync(fd);
  const lines = readFileSync(path, 'utf8').trim().split('\n');
  assert.deepEqual(lines.map((l) => JSON.parse(l).n), Array.from({ length: 100 }, (_, i) => i));
});

test('after drops, the notice and a line longer than what its buffer has left both go out whole', () => {
  const d = scripted();
  const dropped: number[] = [];
  const b = new LineBatcher(9, {
    batchBytes: 24,
    maxQueuedBytes: 70,
    write: d.write,
    writeSync: d.writeSync,
    onDropped: (n) => dropped.push(n),
    dropNotice: (n) => `{"dropped_lines":${n}}\n`, // 20 bytes, in a 60-byte buffer
  });
  // Seven flushed 10-byte batches fill the queue (their 48-byte buffers are too small to reuse
  // for the notice).
  for (let i = 0; i < 7; i++) {
    b.write(`line-${i}...\n`);
    b.flush();
  }
  b.write('lost-line\n');
  b.flush();
  assert.deepEqual(dropped, [1]);
  for (let i = 0; i < 7; i++) d.settle();
  const long = 'y'.repeat(45);
  b.write(`${long}\n`);
  b.flush();
  d.settle();
  d.settle();
  assert.deepEqual(d.out.slice(7).join('').split('\n'), ['{"dropped_lines":1}', long, '']);
});

test('dropped lines written marked are reported apart, with their count, on a full queue and on a failed descriptor', () => {
  const d = scripted(['all', 'EPIPE']);
  const marked: Array<[number, string]> = [];
  const b = new LineBatcher(9, { batchBytes: 1, maxQueuedBytes: 30, write: d.write, writeSync: d.writeSync });
  b.onMarkedDropped = (n, reason) => marked.push([n, reason]);
  b.write(`${'x'.repeat(29)}\n`, true); // in flight
  b.write('plain\n'); // dropped, not marked
  b.write('usage\n', true); // dropped, marked
  assert.deepEqual(marked, [[1, 'queue_full']]);
  d.settle();
  b.write('one\n', true); // the descriptor fails under this one
  d.settle();
  assert.deepEqual(marked, [[1, 'queue_full'], [1, 'write_error']]);
});

test('a framed line (text head, encoded body and tail) is one line: whole in one batch, counted once, dropped marked', () => {
  const body = new Uint8Array(Buffer.from('"é":1'));
  const tail = new Uint8Array(Buffer.from('}\n'));
  const d = scripted();
  const b = new LineBatcher(9, { batchBytes: 12, write: d.write, writeSync: d.writeSync });
  b.write('ab\n');
  b.writeFramed('{"t":"ü",', body, tail); // more than the first buffer has left: a batch of its own
  d.settle();
  d.settle();
  assert.deepEqual(d.out, ['ab\n', '{"t":"ü","é":1}\n']);

  const q = scripted();
  const marked: Array<[number, string]> = [];
  const dropped: number[] = [];
  const full = new LineBatcher(9, { batchBytes: 1, maxQueuedBytes: 30, write: q.write, writeSync: q.writeSync, onDropped: (n) => dropped.push(n) });
  full.onMarkedDropped = (n, reason) => marked.push([n, reason]);
  full.writeFramed(`{"x":"${'y'.repeat(13)}",`, body, tail, true); // 30 bytes, in flight
  full.writeFramed('{', body, tail, true); // queue full: dropped, marked
  full.writeFramed('{', body, tail); // dropped, not marked
  assert.deepEqual(marked, [[1, 'queue_full']]);
  assert.deepEqual(dropped, [1, 1]);
  q.settle();
  assert.deepEqual(q.out, [`{"x":"${'y'.repeat(13)}","é":1}\n`]);
});

test('flushSync waits for the reader of a non-blocking descriptor to make room (EAGAIN), a bounded time', () => {
  const d = scripted();
  let full = 2;
  const written: string[] = [];
  const writeSync = (_fd: number, buffer: Buffer): number => {
    if (full-- > 0) throw Object.assign(new Error('EAGAIN'), { code: 'EAGAIN' });
    written.push(buffer.toString('utf8'));
    return buffer.length;
  };
  const b = new LineBatcher(9, { batchBytes: 5, write: d.write, writeSync });
  b.write('first\n'); // in flight
  b.write('last words\n'); // queued behind it
  b.flushSync();
  assert.deepEqual(written, ['last words\n']);

  const never = new LineBatcher(9, {
    batchBytes: 5,
    write: d.write,
    writeSync: () => {
      throw Object.assign(new Error('EAGAIN'), { code: 'EAGAIN' });
    },
  });
  never.write('first\n');
  never.write('unread\n');
  const started = Date.now();
  never.flushSync();
  const waited = Date.now() - started;
  assert.ok(waited >= 1500 && waited < 5000, `a reader that never reads is waited for ~2 s, not for ever (${waited} ms)`);
});

test('at exit, what a batch in flight has not handed over yet goes first, so no line is torn; without a count, it is left to its write', () => {
  const d = scripted();
  const written: string[] = [];
  const writeSync = (_fd: number, buffer: Buffer): number => {
    written.push(buffer.toString('utf8'));
    return buffer.length;
  };
  // The writer's stream took "first-li" of the batch in flight; "ne\n" (3 bytes) waits in its queue.
  const b = new LineBatcher(9, { batchBytes: 5, write: d.write, writeSync, unwritten: (length) => (length === 11 ? 3 : undefined) });
  b.write('first-line\n'); // in flight
  b.write('second\n'); // queued behind it
  b.flushSync();
  assert.deepEqual(written, ['ne\n', 'second\n']);

  const unknown: string[] = [];
  const c = new LineBatcher(9, {
    batchBytes: 5,
    write: d.write,
    writeSync: (_fd, buffer) => {
      unknown.push(buffer.toString('utf8'));
      return buffer.length;
    },
  });
  c.write('first-line\n');
  c.write('second\n');
  c.flushSync();
  assert.deepEqual(unknown, ['second\n'], 'the thread pool finishes its own write');
});

test('at exit, a reader that keeps taking bytes is waited for past the no-progress bound', () => {
  const d = scripted();
  let taken = '';
  // Room for one byte every 300 ms: slow, but never 2 s without progress. Eight bytes take ~2.1 s.
  let nextRoomAt = Date.now();
  const writeSync = (_fd: number, buffer: Buffer): number => {
    if (Date.now() < nextRoomAt) throw Object.assign(new Error('EAGAIN'), { code: 'EAGAIN' });
    nextRoomAt = Date.now() + 300;
    taken += buffer.toString('utf8', 0, 1);
    return 1;
  };
  const b = new LineBatcher(9, { batchBytes: 2, write: d.write, writeSync });
  b.write('in flight\n');
  b.write('abc\n');
  b.write('def\n');
  const started = Date.now();
  b.flushSync();
  assert.equal(taken, 'abc\ndef\n', `all of it, in ${Date.now() - started} ms`);
});
