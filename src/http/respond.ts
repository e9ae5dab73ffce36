// Writing responses: every answer carries the request id and is counted for the access log.
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
  if (contentType !== undefined) head['content-type'] = contentType;
  if (headers !== undefined) Object.assign(head, headers);
  ctx.status = status;
  // A HEAD answer announces the length but sends no body.
  if (ctx.req.method !== 'HEAD') ctx.responseBytes += length;
  res.writeHead(status, head);
  res.end(body);
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
  const res = ctx.res;
  // A caller that reads nothing for `sendTimeoutMs` while the relay waits on it is cut.
  let timer: NodeJS.Timeout | undefined;
  const stop = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    res.off('close', stop);
  };
  if (ctx.sendTimeoutMs > 0) {
    timer = setTimeout(() => {
      stop();
      cutStalledCaller(ctx);
    }, ctx.sendTimeoutMs);
    res.once('close', stop);
  }
  res.once('drain', () => {
    stop();
    if (onDrain()) source.resume();
  });
  return false;
}

export function endStream(ctx: RequestContext): void {
  if (!ctx.res.writableEnded) ctx.res.end();
}
