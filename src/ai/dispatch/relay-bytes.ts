// Relay an upstream body that is neither JSON nor an event stream the gateway reads (speech
// audio) as it arrives: the upstream's content type, chunked, with backpressure, each gap between
// chunks (the first included) bounded by the stream timeout. A failure before the first byte
// rejects with nothing written (the attempt failed; a model group may fail over); after it, the
// caller's connection is cut, since a byte body has no error frame, and the request is recorded
// with the failure's status.
import { GatewayError } from '../../lib/errors.ts';
import type { RequestContext } from '../../http/context.ts';
import { IdleTimer } from '../../http/idle-timer.ts';
import { endStream, relayChunk, startStream } from '../../http/respond.ts';
import type { UpstreamResponse } from '../../http/upstream.ts';
import { failOnBreak } from './relay.ts';

export function relayBytes(ctx: RequestContext, response: UpstreamResponse, idleMs: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let started = false;
    let finished = false;
    const start = (): void => {
      if (started) return;
      started = true;
      ctx.upstreamFirstByteMs ??= ctx.elapsedMs();
      ctx.downstreamFirstByteMs = ctx.elapsedMs();
      const type = response.headers['content-type'];
      startStream(ctx, 200, { 'content-type': typeof type === 'string' && type !== '' ? type : 'application/octet-stream' });
    };
    const settle = (): void => {
      finished = true;
      ctx.upstreamEndMs = ctx.elapsedMs();
      idle.stop();
      unsubscribe();
    };
    const fail = (err: GatewayError, kind: string): void => {
      if (finished) return;
      settle();
      response.destroy();
      if (!started) {
        reject(err);
        return;
      }
      ctx.fail(kind, err.message);
      ctx.status = err.status;
      ctx.res.destroy();
      resolve();
    };
    const idle = new IdleTimer(idleMs, () => fail(new GatewayError('upstream_timeout', `upstream stream timed out after ${idleMs}ms without data`), 'timeout'));
    const unsubscribe = ctx.onCancel(() => {
      if (finished) return;
      settle();
      ctx.fail('client_disconnected', 'client disconnected mid-body');
      response.destroy();
      resolve();
    });
    const resumeAfterDrain = (): boolean => {
      if (finished) return false;
      idle.arm();
      return true;
    };
    response.on('data', (chunk: Buffer) => {
      if (finished) return;
      start();
      if (!relayChunk(ctx, chunk, response, resumeAfterDrain)) {
        // The caller reads slower than the upstream writes: the idle clock stops meanwhile.
        idle.stop();
        return;
      }
      idle.arm();
    });
    response.once('end', () => {
      if (finished) return;
      // Not a byte: nothing reached the caller, and this is no answer (a group fails over).
      if (!started) {
        fail(new GatewayError('upstream_decode', 'upstream answered with an empty body'), 'upstream_decode');
        return;
      }
      settle();
      endStream(ctx);
      resolve();
    });
    failOnBreak(response, fail, 'body');
    idle.arm();
  });
}
