// Relaying an upstream event stream: the upstream's bytes go to the caller as they arrive (no
// re-framing), a copy feeds the usage tap. The head is sent with the first upstream chunk, so a
// stall or break before any data is still an ordinary error response (ADR 0003). The timeout
// bounds the wait for the first chunk and every gap after it, not the stream's lifetime, and is
// suspended while the caller is the slow side.
//
// How the stream ends (spec 3 §3): delivered whole, recorded with the upstream status (or the
// status of an in-band error: its own 4xx, else 502); the caller leaving, 499; an upstream
// break, 502; a read timeout, 504. A break or timeout after the head ends the stream with an
// `event: error` frame in the gateway envelope; the HTTP status is already on the wire.
import { IdleTimer } from '../http/idle-timer.ts';
import { endStream, relayChunk, writeChunk } from '../http/respond.ts';
import { errorFrame, passthroughError } from './errors.ts';
import type { PassthroughExchange } from './exchange.ts';
import type { ResponseFailure, ResponseFilter } from './hooks.ts';
import { relayedResponseHeaders } from './response-headers.ts';
import { EventStreamTap } from './stream-tap.ts';
import { createTapDecoder } from './tap-decoder.ts';
import type { UpstreamResponse } from '../http/upstream.ts';

export function isEventStream(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  return contentType.trimStart().slice(0, 17).toLowerCase() === 'text/event-stream';
}

export function relayEventStream(
  x: PassthroughExchange,
  response: UpstreamResponse,
  idleMs: number,
  filters: readonly ResponseFilter[],
): Promise<void> {
  const ctx = x.ctx;
  const status = response.statusCode ?? 502;
  const tap = new EventStreamTap(x.shape);
  // Recorded when the event is read (on the side, for a compressed stream), not at stream end: a
  // caller that leaves at the error frame must not turn the row into a 499.
  tap.onInBandError = (e) => x.inBand(e.status);
  x.stream = true;
  ctx.stream = true;
  const decoder = createTapDecoder(response.headers['content-encoding'], (chunk) => tap.push(chunk));
  const headers = relayedResponseHeaders(response.rawHeaders, ctx.requestId, { dropContentLength: true });

  return new Promise<void>((resolve) => {
    let started = false;
    let finished = false;

    const start = (): void => {
      started = true;
      ctx.status = status;
      ctx.downstreamFirstByteMs = ctx.elapsedMs();
      ctx.res.writeHead(status, headers);
      ctx.res.flushHeaders();
    };
    const settleTap = (): void => {
      if (decoder === undefined) return;
      if (decoder.sync) {
        tap.end();
        x.setTokens(tap.usage);
        return;
      }
      x.waitFor(decoder.end().then(() => {
        tap.end();
        x.setTokens(tap.usage);
      }));
    };
    const stop = (): void => {
      finished = true;
      ctx.upstreamEndMs = ctx.elapsedMs();
      idle.stop();
      unsubscribe();
      x.setEndHandler(undefined);
    };
    const endWith = (failure: ResponseFailure): void => {
      if (finished) return;
      stop();
      response.destroy();
      settleTap();
      const e = failure.error;
      if (!started) {
        x.answerError(e, failure.errorClass);
      } else {
        x.record(e.status, failure.errorClass, e.message);
        writeChunk(ctx, errorFrame(e));
        endStream(ctx);
      }
      resolve();
    };
    const idle = new IdleTimer(idleMs, () => {
      endWith({ error: passthroughError('upstream_timeout', `upstream stream timed out after ${idleMs}ms without data`), errorClass: 'timeout' });
    });
    const resumeAfterDrain = (): boolean => {
      if (finished) return false;
      idle.arm();
      return true;
    };
    const unsubscribe = ctx.onCancel(() => {
      if (finished) return;
      stop();
      response.destroy();
      settleTap();
      x.callerLeft('client disconnected mid-stream');
      resolve();
    });
    const broke = (): void => {
      endWith({ error: passthroughError('upstream_transport', 'upstream connection broke mid-stream'), errorClass: 'transport' });
    };

    response.on('data', (chunk: Buffer) => {
      if (finished) return;
      if (!started) {
        ctx.upstreamFirstByteMs = ctx.elapsedMs();
        start();
      }
      for (const f of filters) {
        const refused = f.chunk?.(chunk);
        if (refused !== undefined) {
          endWith(refused);
          return;
        }
      }
      decoder?.write(chunk);
      if (!relayChunk(ctx, chunk, response, resumeAfterDrain)) {
        // The caller is the slow side: the idle clock stops meanwhile.
        idle.stop();
        return;
      }
      idle.arm();
    });
    response.once('end', () => {
      if (finished) return;
      stop();
      if (!started) start();
      settleTap();
      endStream(ctx);
      resolve();
    });
    response.once('error', broke);
    response.once('aborted', broke);
    response.once('close', () => {
      if (!response.complete) broke();
    });
    x.setEndHandler(endWith);
    idle.arm();
  });
}
