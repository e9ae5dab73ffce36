import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { RequestContext } from './context.ts';
import { relayChunk } from './respond.ts';

/** A response whose socket buffer is full until `drain` is emitted. */
function fakeResponse(full: boolean): ServerResponse & { written: string[] } {
  const res = new EventEmitter() as unknown as ServerResponse & { written: string[] };
  res.written = [];
  Object.assign(res, { writableEnded: false, destroyed: false, write: (c: string) => (res.written.push(c), !full) });
  return res;
}

function source() {
  const s = { paused: false, pause: () => void (s.paused = true), resume: () => void (s.paused = false) };
  return s;
}

test('relayChunk writes and leaves the source flowing while the caller keeps up', () => {
  const res = fakeResponse(false);
  const ctx = new RequestContext({ headers: {} } as IncomingMessage, res, 'r', '127.0.0.1');
  const src = source();
  assert.equal(relayChunk(ctx, 'abc', src, () => true), true);
  assert.deepEqual(res.written, ['abc']);
  assert.equal(ctx.responseBytes, 3);
  assert.equal(src.paused, false);
});

test('relayChunk pauses the source on a full buffer and resumes it on drain, unless the relay ended', () => {
  const res = fakeResponse(true);
  const ctx = new RequestContext({ headers: {} } as IncomingMessage, res, 'r', '127.0.0.1');
  const src = source();
  let drained = 0;
  assert.equal(relayChunk(ctx, 'x', src, () => (drained++, true)), false);
  assert.equal(src.paused, true);
  res.emit('drain');
  assert.equal(drained, 1);
  assert.equal(src.paused, false);

  assert.equal(relayChunk(ctx, 'y', src, () => false), false);
  res.emit('drain');
  assert.equal(src.paused, true, 'an ended relay stays paused');
});
