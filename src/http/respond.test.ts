import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { RequestContext } from './context.ts';
import { endWithBody, relayChunk } from './respond.ts';

/** A response whose socket buffer is full until `drain` is emitted. */
function fakeResponse(full: boolean): ServerResponse & { written: string[] } {
  const res = new EventEmitter() as unknown as ServerResponse & { written: string[] };
  res.written = [];
  Object.assign(res, {
    writableEnded: false,
    writableFinished: false,
    destroyed: false,
    write: (c: string) => (res.written.push(c), !full),
    destroy: () => {
      Object.assign(res, { destroyed: true });
      res.emit('close');
    },
  });
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

test('relayChunk cuts a caller that does not drain within sendTimeoutMs, recorded 499', async () => {
  const res = fakeResponse(true);
  const ctx = new RequestContext({ headers: {} } as IncomingMessage, res, 'r', '127.0.0.1');
  ctx.sendTimeoutMs = 30;
  ctx.status = 200;
  const src = source();
  assert.equal(relayChunk(ctx, 'x', src, () => true), false);
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(res.destroyed, true);
  assert.equal(ctx.status, 499);
  assert.equal(ctx.errorKind, 'client_disconnected');
  assert.match(ctx.errorMessage ?? '', /stopped reading the response for 30 ms/);
  assert.equal(res.listenerCount('close'), 0);
});

test('relayChunk keeps a caller that drains in time, and leaves no timer or listener behind', async () => {
  const res = fakeResponse(true);
  const ctx = new RequestContext({ headers: {} } as IncomingMessage, res, 'r', '127.0.0.1');
  ctx.sendTimeoutMs = 40;
  const src = source();
  for (let i = 0; i < 3; i++) {
    assert.equal(relayChunk(ctx, 'x', src, () => true), false);
    await new Promise((r) => setTimeout(r, 25));
    res.emit('drain');
  }
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(res.destroyed, false);
  assert.equal(ctx.errorKind, undefined);
  assert.equal(res.listenerCount('close'), 0);
  assert.equal(res.listenerCount('drain'), 0);
});

test('relayChunk with sendTimeoutMs 0 waits for the caller without bound', async () => {
  const res = fakeResponse(true);
  const ctx = new RequestContext({ headers: {} } as IncomingMessage, res, 'r', '127.0.0.1');
  assert.equal(relayChunk(ctx, 'x', source(), () => true), false);
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(res.destroyed, false);
  assert.equal(res.listenerCount('close'), 0);
});

/** A response that records writes and its end; its buffer is full (writes return false) when `full`. */
function endingResponse(full: boolean, pendingAfterEnd = 0): ServerResponse & { written: number[]; ended: number | undefined } {
  const res = fakeResponse(full) as unknown as ServerResponse & { written: number[]; ended: number | undefined };
  res.written = [];
  res.ended = undefined;
  Object.assign(res, {
    writableLength: 0,
    write: (c: Buffer) => (res.written.push(c.length), !full),
    end: (c?: Buffer | string) => {
      res.ended = c === undefined ? 0 : Buffer.byteLength(c);
      Object.assign(res, { writableEnded: true, writableLength: pendingAfterEnd });
    },
  });
  return res;
}

function contextOf(res: ServerResponse, sendTimeoutMs: number): RequestContext {
  const ctx = new RequestContext({ headers: {} } as IncomingMessage, res, 'r', '127.0.0.1');
  ctx.sendTimeoutMs = sendTimeoutMs;
  ctx.status = 200;
  return ctx;
}

test('endWithBody sends a large body slice by slice, the next slice when the caller made room', () => {
  const res = endingResponse(true);
  endWithBody(contextOf(res, 1000), Buffer.alloc(200 * 1024), 200 * 1024);
  assert.deepEqual(res.written, [64 * 1024]);
  res.emit('drain');
  res.emit('drain');
  assert.deepEqual(res.written, [64 * 1024, 64 * 1024, 64 * 1024]);
  assert.equal(res.ended, undefined);
  res.emit('drain');
  assert.equal(res.ended, 8 * 1024);
  assert.equal(res.listenerCount('close'), 0);
  assert.equal(res.listenerCount('drain'), 0);
  assert.equal(res.listenerCount('finish'), 0, 'flushed: nothing left to wait for');
});

test('endWithBody cuts a caller that makes no room for the next slice within sendTimeoutMs, recorded 499', async () => {
  const res = endingResponse(true);
  const ctx = contextOf(res, 30);
  endWithBody(ctx, 'x'.repeat(100 * 1024), 100 * 1024);
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(res.destroyed, true);
  assert.equal(res.ended, undefined);
  assert.equal(ctx.status, 499);
  assert.equal(ctx.errorKind, 'client_disconnected');
  assert.match(ctx.errorMessage ?? '', /stopped reading the response for 30 ms/);
});

test('endWithBody: an ended body the socket could not take is bounded too; a flushed one waits for nothing', async () => {
  const stuck = endingResponse(false, 1000);
  const ctx = contextOf(stuck, 30);
  endWithBody(ctx, 'small', 5);
  assert.equal(stuck.ended, 5);
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(stuck.destroyed, true);
  assert.equal(ctx.status, 499);

  const taken = endingResponse(false, 1000);
  endWithBody(contextOf(taken, 30), 'small', 5);
  taken.emit('finish');
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(taken.destroyed, false);

  const flushed = endingResponse(false, 0);
  endWithBody(contextOf(flushed, 30), 'small', 5);
  assert.equal(flushed.listenerCount('finish') + flushed.listenerCount('close'), 0);
});

test('endWithBody with sendTimeoutMs 0 ends with the whole body at once', () => {
  const res = endingResponse(true, 1000);
  endWithBody(contextOf(res, 0), Buffer.alloc(200 * 1024), 200 * 1024);
  assert.deepEqual(res.written, []);
  assert.equal(res.ended, 200 * 1024);
  assert.equal(res.listenerCount('finish') + res.listenerCount('close'), 0);
});
