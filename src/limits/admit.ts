// The admit phase of the AI endpoints: reserve the request's limits after the model resolved and
// before dispatch, put the `x-ratelimit-*` headers on the response, keep the handle on the
// context for finalize, and end the response when a shared concurrency lease is lost.
import { GatewayError } from '../lib/errors.ts';
import type { RequestContext } from '../http/context.ts';
import { endStream, sendJson, writeChunk } from '../http/respond.ts';
import type { ApiKeyEntry, ModelEntry, Snapshot } from '../snapshot/snapshot.ts';
import { LEASE_LOST_MESSAGE, type LimitHandle, type Limiter } from './limiter.ts';

/** The part of a caller codec this phase needs: its error envelope and stream error frame. */
export interface ErrorRenderer {
  errorBody(err: GatewayError): unknown;
  streamErrorFrame(err: GatewayError): string;
}

/**
 * Reserve the request's limits: undefined (no promise) when no limit applies, else a promise that
 * rejects with the caller-facing 429 (or 503, fail_closed) when a limit refuses.
 */
export function admitLimits(
  ctx: RequestContext,
  limiter: Limiter | undefined,
  snapshot: Snapshot,
  key: ApiKeyEntry,
  model: ModelEntry,
  codec: ErrorRenderer,
): Promise<void> | undefined {
  return limiter?.admit({ snapshot, key, model, chargeTokens: true, attribution: ctx })?.then((handle) => hold(ctx, handle, codec));
}

/** Keep an admitted request's handle for finalize and put its headers on the response. */
function hold(ctx: RequestContext, handle: LimitHandle, codec: ErrorRenderer): void {
  ctx.limits = handle;
  if (ctx.clientDisconnected) {
    // The caller left while the store answered: finalize may already have run.
    handle.release(undefined);
    return;
  }
  for (const [name, value] of handle.headers) ctx.res.setHeader(name, value);
  if (handle.slotKeys.length > 0) handle.onLost(() => endOnLeaseLost(ctx, codec));
}

/**
 * A lost lease ends the request as a 429 (`rate_limit_lease_lost`): before the head, an error
 * answer in the caller's envelope; after it, the caller protocol's error frame and the end of
 * the stream. Then the in-flight upstream call is cancelled the way a client disconnect
 * cancels it (the recorded status and error class stay the lease loss).
 */
export function endOnLeaseLost(ctx: RequestContext, codec: ErrorRenderer): void {
  if (ctx.res.writableEnded) return;
  const err = new GatewayError('rate_limit_lease_lost', LEASE_LOST_MESSAGE);
  ctx.fail('rate_limit_lease_lost', LEASE_LOST_MESSAGE);
  if (!ctx.res.headersSent) {
    sendJson(ctx, err.status, codec.errorBody(err));
  } else {
    ctx.status = err.status;
    writeChunk(ctx, codec.streamErrorFrame(err));
    endStream(ctx);
  }
  ctx.clientGone();
}
