// Writing responses: every answer carries the request id and is counted for the access log. A
// caller that stops reading is cut after `ctx.sendTimeoutMs` without room made for the response,
// whether it is streamed or sent whole.
import type { OutgoingHttpHeaders } from 'node:http';
import type { RequestContext } from './context.ts';
import { REQUEST_ID_HEADER } from './request-id.ts';

export function sendJson(
  ctx: RequestContext,
  status: number,
  body: unknown,
  headers?: Record<string, string>,
): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  sendBody(ctx, status, text, 'application/json', headers);
}

export function sendBody(
  ctx: RequestContext,
  status: number,
  body: string | Buffer,
  contentType: string | undefined,
  headers?: Record<string, string>,
): void {
  const res = ctx.res;
  if (res.headersSent) {
    if (!res.writableEnded) res.end();
    return;
  }
  const length = typeof body === 'string' ? Buffer.byteLength(body) : body.length;
  const head: OutgoingHttpHeaders = {
    [REQUEST_ID_HEADER]: ctx.requestId,
    'content-length': length,
  };
  if (ctx.sdkRequestIdHeader !== undefined) head[ctx.sdkRequestIdHeader] = ctx.requestId;
  if (contentType !== undefined) head['content-type'] = contentType;
  if (headers !== undefined) Object.assign(head, headers);
  ctx.status = status;
  res.writeHead(status, head);
  // A HEAD answer announces the length but sends no body.
  if (ctx.req.method === 'HEAD') {
    res.end();
    return;
  }
  ctx.responseBytes += length;
  endWithBody(ctx, body, length);
}

/** A complete body goes out in slices this large when a send timeout applies; smaller ones at once. */
const SEND_SLICE_BYTES = 64 * 1024;

/**
 * End the response (head written, bytes counted) with the rest of its body. A body the caller
 * does not take would otherwise sit in memory, with the request's records and limit slots, until
 * the caller closes the connection: with a send timeout, a large body goes out slice by slice with
 * backpressure, and a caller that makes no room for `ctx.sendTimeoutMs` (for the next slice, or
 * for the last bytes once the body is ended) is cut and recorded 499, as a stalled stream reader is.
 */
export function endWithBody(ctx: RequestContext, body: string | Buffer, length: number): void {
  const res = ctx.res;
  if (ctx.sendTimeoutMs <= 0) {
    res.end(body);
    return;
  }
  if (length <= SEND_SLICE_BYTES) {
    res.end(body);
    awaitFlush(ctx);
    return;
  }
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  let offset = 0;
  const next = (): void => {
    while (bytes.length - offset > SEND_SLICE_BYTES) {
      if (res.destroyed) return;
      const slice = bytes.subarray(offset, offset + SEND_SLICE_BYTES);
      offset += SEND_SLICE_BYTES;
      if (!res.write(slice)) {
        awaitRoom(ctx, 'drain', next);
        return;
      }
    }
    if (res.destroyed) return;
    res.end(bytes.subarray(offset));
    awaitFlush(ctx);
  };
  next();
}

/** An ended response whose last bytes the socket could not take yet: bounded like any other wait on the caller. */
function awaitFlush(ctx: RequestContext): void {
  if (ctx.res.writableLength > 0) awaitRoom(ctx, 'finish', noop);
}

function noop(): void {}

/**
 * Run `then` once the caller has made room for the response (`drain`: the buffered part was taken;
 * `finish`: all of it was). A caller that makes none within `ctx.sendTimeoutMs` is cut instead.
 */
function awaitRoom(ctx: RequestContext, event: 'drain' | 'finish', then: () => void): void {
  const res = ctx.res;
  let timer: NodeJS.Timeout | undefined;
  const stop = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    res.off('close', stop);
  };
  const onRoom = (): void => {
    stop();
    then();
  };
  if (ctx.sendTimeoutMs > 0) {
    timer = setTimeout(() => {
      stop();
      res.off(event, onRoom);
      cutStalledCaller(ctx);
    }, ctx.sendTimeoutMs);
    res.once('close', stop);
  }
  res.once(event, onRoom);
}

/**
 * The caller stopped reading: the response cannot be delivered, and holding it (an upstream
 * stream paused for it, limit slots) has no end. Recorded as the caller leaving (499).
 */
function cutStalledCaller(ctx: RequestContext): void {
  const res = ctx.res;
  if (res.destroyed || res.writableFinished) return;
  ctx.status = 499;
  ctx.fail('client_disconnected', `client stopped reading the response for ${ctx.sendTimeoutMs} ms`);
  res.destroy();
}

/** An empty response (unrouted paths answer 404 with no body). */
export function sendEmpty(ctx: RequestContext, status: number, headers?: Record<string, string>): void {
  sendBody(ctx, status, '', undefined, headers);
}

/** Start a streamed response; later writes go through `writeChunk`. */
export function startStream(ctx: RequestContext, status: number, headers: OutgoingHttpHeaders): void {
  ctx.status = status;
  headers[REQUEST_ID_HEADER] = ctx.requestId;
  if (ctx.sdkRequestIdHeader !== undefined) headers[ctx.sdkRequestIdHeader] = ctx.requestId;
  ctx.res.writeHead(status, headers);
  // Push the head out now: SSE clients wait on it, and it is what time-to-first-byte measures.
  ctx.res.flushHeaders();
}

/** Write a chunk of a streamed body; returns false when the socket buffer is full. */
export function writeChunk(ctx: RequestContext, chunk: string | Buffer): boolean {
  if (ctx.res.writableEnded || ctx.res.destroyed) return true;
  ctx.responseBytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
  return ctx.res.write(chunk);
}

/**
 * Write a relayed chunk with backpressure: when the caller's socket buffer is full, stop reading
 * `source` until it drains. On drain `onDrain` runs first and returns false when the relay ended
 * meanwhile (the source then stays paused). Returns false when it paused the source. A caller
 * that does not drain within `ctx.sendTimeoutMs` is cut (recorded 499).
 */
export function relayChunk(ctx: RequestContext, chunk: string | Buffer, source: { pause(): void; resume(): void }, onDrain: () => boolean): boolean {
  if (writeChunk(ctx, chunk)) return true;
  source.pause();
  awaitRoom(ctx, 'drain', () => {
    if (onDrain()) source.resume();
  });
  return false;
}

/** End a streamed response, with `last` as its final bytes (under the send timeout) when given. */
export function endStream(ctx: RequestContext, last?: string): void {
  const res = ctx.res;
  if (res.writableEnded) return;
  if (last === undefined || res.destroyed) {
    res.end();
    return;
  }
  const length = Buffer.byteLength(last);
  ctx.responseBytes += length;
  endWithBody(ctx, last, length);
}
