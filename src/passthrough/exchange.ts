// The state of one pass-through request from match to finalize, and its finalize step: the
// usage event (exactly one per request, emitted once the response is closed and any side
// decoding of the body has finished) and the release of what admit checks hold.
import type { RequestContext } from '../http/context.ts';
import type { CancelSource } from '../http/upstream.ts';
import { sendBody } from '../http/respond.ts';
import { isoTime } from '../lib/iso-time.ts';
import { usageRequest, type UsageSink } from '../observability/usage-events.ts';
import type { ApiKeyEntry } from '../snapshot/snapshot.ts';
import type { CompiledRoute } from './compile-routes.ts';
import { errorEnvelope, type PassthroughError } from './errors.ts';
import type { FinalOutcome, ResponseFailure } from './hooks.ts';
import type { RequestShape } from './request-shape.ts';
import { IN_BAND_MESSAGE } from './stream-tap.ts';
import type { TokenCounts } from './token-counts.ts';
import { passthroughUsageEvent } from './usage-event.ts';

export class PassthroughExchange {
  readonly ctx: RequestContext;
  readonly route: CompiledRoute;
  /** The normalized inbound host the request matched with ('' when none). */
  readonly host: string;
  private readonly usage: UsageSink;

  key: ApiKeyEntry | undefined = undefined;
  shape: RequestShape = 'opaque';
  requestedModel = '';
  clientIdentity: string | null = null;
  /** A valid inbound W3C trace id, consumed for the gateway's own trace. */
  traceId: string | undefined = undefined;
  dispatched = false;
  stream = false;
  tokens: TokenCounts | undefined = undefined;

  /**
   * The recorded status when it is not the one sent (a stream or body the gateway had to end, an
   * in-band error event): the first such ending decides.
   */
  private endStatus: number | undefined = undefined;
  private errorClass: string | null = null;
  private errorMessage: string | null = null;
  private readonly pending: Promise<void>[] = [];
  private readonly releases: Array<(outcome: FinalOutcome) => void> = [];
  private finalized = false;
  /** Reports an exception of a usage emission that waited for pending work (set by the handler). */
  onFinalizeError: (err: unknown) => void = () => {};
  private endHandler: ((failure: ResponseFailure) => void) | undefined = undefined;
  private pendingEnd: ResponseFailure | undefined = undefined;
  /** The proxy's access line and metrics, run with the usage event (see finalize). */
  private report: ((time?: string) => void) | undefined = undefined;

  constructor(ctx: RequestContext, route: CompiledRoute, host: string, usage: UsageSink) {
    this.ctx = ctx;
    this.route = route;
    this.host = host;
    this.usage = usage;
    // The access line and the metrics wait for what the usage event waits for (a compressed
    // body's tokens or in-band error, decoded on the side), so the three records agree.
    ctx.deferReport = (report) => {
      this.report = report;
    };
  }

  /** The first failure names the request's error (usage error_class, access-log error_kind). */
  fail(errorClass: string, message: string): void {
    if (this.errorClass === null) {
      this.errorClass = errorClass;
      this.errorMessage = message;
    }
    this.ctx.fail(errorClass, message);
  }

  /**
   * A stream or body ended after its head: record `status`, not the one sent, in every record of
   * the request (the first such ending decides).
   */
  record(status: number, errorClass: string, message: string): void {
    if (this.endStatus === undefined) {
      this.endStatus = status;
      this.ctx.status = status;
    }
    this.fail(errorClass, message);
  }

  /** The upstream sent an in-band error event: its status is recorded unless a failure came first. */
  inBand(status: number): void {
    if (this.errorClass === null) this.record(status, 'upstream_in_band', IN_BAND_MESSAGE);
  }

  /**
   * The caller is gone (recorded 499): it left, with `message` saying when, or the gateway cut it
   * for not reading (the context then already holds that reason). A failure recorded before
   * (an upstream error status or in-band error the caller was reading) stays the record.
   */
  callerLeft(message: string): void {
    const ctx = this.ctx;
    if (this.errorClass !== null && (this.endStatus !== undefined || ctx.status !== 0)) return;
    this.record(499, 'client_disconnected', ctx.errorKind === 'client_disconnected' && ctx.errorMessage !== undefined ? ctx.errorMessage : message);
  }

  /** Answer with an error envelope (nothing has been sent yet). */
  answerError(e: PassthroughError, errorClass: string = e.code): void {
    this.fail(errorClass, e.message);
    if (this.ctx.clientDisconnected) return;
    sendBody(this.ctx, e.status, errorEnvelope(e), 'application/json', e.headers);
  }

  setTokens(tokens: TokenCounts | undefined): void {
    this.tokens = tokens;
    if (tokens === undefined) return;
    this.ctx.usage = {
      promptTokens: tokens.prompt,
      completionTokens: tokens.completion,
      totalTokens: tokens.total,
      cachedTokens: tokens.cached,
      cacheCreationTokens: tokens.cacheCreation,
      reasoningTokens: tokens.reasoning,
    };
  }

  /** Finalize waits for `work` (side decoding of the body) before emitting. */
  waitFor(work: Promise<void>): void {
    this.pending.push(work);
  }

  /** Called once when the request ends; at once if it already has. */
  onFinal(release: (outcome: FinalOutcome) => void): void {
    if (this.finalized) release(this.outcome());
    else this.releases.push(release);
  }

  /** The relay running this request's response installs how to end it from outside. */
  setEndHandler(handler: ((failure: ResponseFailure) => void) | undefined): void {
    this.endHandler = handler;
    const early = this.pendingEnd;
    if (handler !== undefined && early !== undefined) {
      this.pendingEnd = undefined;
      handler(early);
    }
  }

  /** Set while the upstream call awaits its head: stops that call. */
  private stopUpstream: (() => void) | undefined = undefined;

  /**
   * The upstream call's cancellation: when the caller leaves, or when `end` is called before the
   * head (a reservation lost), so that the failure is answered at once rather than when the
   * upstream answers.
   */
  upstreamCancel(): CancelSource {
    return {
      onCancel: (stop) => {
        this.stopUpstream = stop;
        const off = this.ctx.onCancel(stop);
        if (this.pendingEnd !== undefined) stop();
        return () => {
          this.stopUpstream = undefined;
          off();
        };
      },
    };
  }

  /** End the response from outside (an admit check's reservation was lost). */
  end(failure: ResponseFailure): void {
    if (this.finalized) return;
    if (this.endHandler !== undefined) {
      this.endHandler(failure);
      return;
    }
    this.pendingEnd ??= failure;
    this.stopUpstream?.();
  }


  /** A failure handed to `end` before the relay started. */
  takePendingEnd(): ResponseFailure | undefined {
    const f = this.pendingEnd;
    this.pendingEnd = undefined;
    return f;
  }

  private recordedStatus(): number {
    if (this.endStatus !== undefined) return this.endStatus;
    return this.ctx.status === 0 ? 499 : this.ctx.status;
  }

  private outcome(): FinalOutcome {
    return { status: this.recordedStatus(), stream: this.stream, tokens: this.tokens };
  }

  /** The response is closed: release holds and emit the usage event (exactly once). */
  finalize(): void {
    if (this.finalized) return;
    this.finalized = true;
    this.endHandler = undefined;
    // The proxy's own close listener runs first and has already told a request timeout (408) apart.
    if (this.ctx.errorKind === 'shutting_down' && this.ctx.status === 503) {
      // The gateway's shutdown cut the exchange: that, not the cancel it caused, is the record.
      this.endStatus = 503;
      this.errorClass = 'shutting_down';
      this.errorMessage = this.ctx.errorMessage ?? 'request cut by the drain timeout at shutdown';
    } else if (this.ctx.errorKind === 'request_timeout') this.record(408, 'request_timeout', this.ctx.errorMessage ?? 'request timed out');
    else if (this.ctx.clientDisconnected) this.callerLeft('client disconnected before the response finished');
    const emit = (): void => {
      const outcome = this.outcome();
      for (const release of this.releases) {
        try {
          release(outcome);
        } catch {
          // A failing release must not cost the usage event.
        }
      }
      const ctx = this.ctx;
      const time = isoTime();
      // The access line and the metrics say what the usage event says.
      ctx.status = outcome.status;
      if (this.errorClass !== null) {
        ctx.errorKind = this.errorClass;
        ctx.errorMessage = this.errorMessage ?? undefined;
      }
      const report = this.report;
      this.report = undefined;
      try {
        report?.(time);
      } catch (err) {
        // A failing report must not cost the usage event.
        this.onFinalizeError(err);
      }
      const credential = this.route.credential;
      this.usage.emit(passthroughUsageEvent({
        requestId: this.ctx.requestId,
        routeName: this.route.name,
        requestedModel: this.requestedModel,
        provider: credential.mode === 'inject' ? credential.provider : null,
        providerKeyId: credential.mode === 'inject' ? credential.providerKeyId : null,
        apiKeyId: this.key?.id ?? null,
        status: outcome.status,
        errorClass: this.errorClass,
        errorMessage: this.errorMessage,
        dispatched: this.dispatched,
        stream: this.stream,
        tokens: this.tokens,
        latencyMs: this.ctx.latencyMs(),
        upstreamSentMs: this.ctx.upstreamSentMs,
        upstreamFirstByteMs: this.ctx.upstreamFirstByteMs,
        upstreamEndMs: this.ctx.upstreamEndMs,
        downstreamFirstByteMs: this.ctx.downstreamFirstByteMs,
        clientIdentity: this.clientIdentity,
      }, time), usageRequest(this.ctx, this.route.authHeader));
    };
    if (this.pending.length === 0) emit();
    else void Promise.all(this.pending).then(emit, emit).catch(this.onFinalizeError);
  }
}
