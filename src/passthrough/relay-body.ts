// Relaying a non-event-stream response. Bodies up to BUFFER_LIMIT are buffered within the
// exchange timeout, so a stall or break is still a clean 504 or 502, usage is read from the whole
// body, and response filters can refuse it before delivery; the body then goes out unchanged
// with its exact length. Larger bodies (file downloads) are relayed as they arrive, still under
// the timeout (its clock stops while the caller is the slow side); a failure after their head
// cuts the connection (the caller sees a short body) and is recorded as 502 or 504.
import { performance } from 'node:perf_hooks';
import { endWithBody, relayChunk, writeChunk } from '../http/respond.ts';
import { bufferedTokenCounts } from './buffered-usage.ts';
import { passthroughError, type PassthroughError } from './errors.ts';
import type { PassthroughExchange } from './exchange.ts';
import type { ResponseFailure, ResponseFilter } from './hooks.ts';
import { relayedResponseHeaders } from './response-headers.ts';
import { createTapDecoder } from './tap-decoder.ts';
import type { UpstreamResponse } from '../http/upstream.ts';

export const BUFFER_LIMIT = 16 * 1024 * 1024;

function declaredLength(response: UpstreamResponse): number | undefined {
  const v = response.headers['content-length'];
  if (v === undefined) return undefined;
  const n = Number(v);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** Usage of a buffered body, decoded on the side when the upstream compressed it. */
function tapBody(x: PassthroughExchange, response: UpstreamResponse, body: Buffer): void {
  const status = response.statusCode ?? 0;
  if (x.shape === 'opaque' || status < 200 || status >= 300 || body.length === 0) return;
  const parts: Buffer[] = [];
  const decoder = createTapDecoder(response.headers['content-encoding'], (c) => parts.push(c));
  if (decoder === undefined) return;
  decoder.write(body);
  const read = (): void => x.setTokens(bufferedTokenCounts(x.shape, Buffer.concat(parts).toString('utf8')));
  if (decoder.sync) read();
  else x.waitFor(decoder.end().then(read));
}

/**
 * `deadline` is the performance.now() instant the exchange must finish by (0 = none);
 * `timeoutMs` names the bound in messages.
 */
export function relayBody(
  x: PassthroughExchange,
  response: UpstreamResponse,
  deadline: number,
  timeoutMs: number,
  filters: readonly ResponseFilter[],
): Promise<void> {
  const ctx = x.ctx;
  const res = ctx.res;
  const status = response.statusCode ?? 502;
  const rawHeaders = response.rawHeaders;

  // The first byte of a body that is not an event stream is its head, as on the model path.
  ctx.upstreamFirstByteMs = ctx.elapsedMs();
  const method = ctx.req.method ?? 'GET';
  if (method === 'HEAD' || status === 204 || status === 304) {
    ctx.status = status;
    ctx.upstreamEndMs = ctx.upstreamFirstByteMs;
    ctx.downstreamFirstByteMs = ctx.elapsedMs();
    res.writeHead(status, relayedResponseHeaders(rawHeaders, ctx.requestId, { dropContentLength: false }));
    res.end();
    response.resume();
    return Promise.resolve();
  }

  return new Promise<void>((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let streaming = false;
    let finished = false;
    let timer: NodeJS.Timeout | undefined;

    const stop = (): void => {
      finished = true;
      ctx.upstreamEndMs = ctx.elapsedMs();
      if (timer !== undefined) clearTimeout(timer);
      unsubscribe();
      x.setEndHandler(undefined);
    };
    const fail = (failure: ResponseFailure): void => {
      if (finished) return;
      stop();
      response.destroy();
      if (!streaming) {
        x.answerError(failure.error, failure.errorClass);
      } else {
        // The head is out: the only honest signal left is cutting the connection.
        x.record(failure.error.status, failure.errorClass, failure.error.message);
        res.destroy();
      }
      resolve();
    };
    const refusal = (body: Buffer | undefined): ResponseFailure | undefined => {
      for (const f of filters) {
        const r = f.body?.(status, body);
        if (r !== undefined) return r;
      }
      return undefined;
    };
    const startStreaming = (): boolean => {
      const refused = refusal(undefined);
      if (refused !== undefined) {
        fail(refused);
        return false;
      }
      streaming = true;
      ctx.status = status;
      ctx.downstreamFirstByteMs = ctx.elapsedMs();
      res.writeHead(status, relayedResponseHeaders(rawHeaders, ctx.requestId, { dropContentLength: false }));
      for (const c of chunks) writeChunk(ctx, c);
      chunks.length = 0;
      return true;
    };
    let due = deadline;
    const arm = (): void => {
      if (due <= 0) return;
      const timeout: PassthroughError = passthroughError('upstream_timeout', `upstream request timed out after ${timeoutMs}ms`);
      timer = setTimeout(() => fail({ error: timeout, errorClass: 'timeout' }), Math.max(1, due - performance.now()));
    };
    let left = 0;
    const resumeAfterDrain = (): boolean => {
      if (finished) return false;
      if (due > 0) due = performance.now() + left;
      arm();
      return true;
    };
    const write = (chunk: Buffer): void => {
      if (relayChunk(ctx, chunk, response, resumeAfterDrain)) return;
      // The caller is the slow side: the bound is on the upstream, so its clock stops meanwhile.
      left = due - performance.now();
      if (timer !== undefined) clearTimeout(timer);
    };

    arm();
    const unsubscribe = ctx.onCancel(() => {
      if (finished) return;
      stop();
      response.destroy();
      x.callerLeft('client disconnected before the response finished');
      resolve();
    });
    const broke = (): void => {
      fail({ error: passthroughError('upstream_transport', 'upstream connection broke while sending the body'), errorClass: 'transport' });
    };

    const declared = declaredLength(response);
    if (declared !== undefined && declared > BUFFER_LIMIT && !startStreaming()) return;

    response.on('data', (chunk: Buffer) => {
      if (finished) return;
      if (streaming) {
        write(chunk);
        return;
      }
      size += chunk.length;
      chunks.push(chunk);
      if (size > BUFFER_LIMIT && !startStreaming()) return;
    });
    response.once('end', () => {
      if (finished) return;
      stop();
      if (streaming) {
        res.end();
        resolve();
        return;
      }
      const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size);
      const refused = refusal(body);
      if (refused !== undefined) {
        x.answerError(refused.error, refused.errorClass);
        resolve();
        return;
      }
      tapBody(x, response, body);
      ctx.status = status;
      ctx.responseBytes += body.length;
      ctx.downstreamFirstByteMs = ctx.elapsedMs();
      res.writeHead(status, relayedResponseHeaders(rawHeaders, ctx.requestId, { dropContentLength: false, contentLength: body.length }));
      endWithBody(ctx, body, body.length);
      resolve();
    });
    response.once('error', broke);
    response.once('aborted', broke);
    response.once('close', () => {
      if (!response.complete) broke();
    });
    x.setEndHandler(fail);
  });
}
