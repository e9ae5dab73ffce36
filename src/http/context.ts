// RequestContext: the typed state one data-plane request carries through its phases, and the
// fields the finalize phase reports (access log, metrics).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { ContentCapture } from '../observability/content-capture.ts';

export interface TokenUsage {
  promptTokens?: number;
  completionTokens?: number;
  totalTokens?: number;
  cachedTokens?: number;
  cacheCreationTokens?: number;
  reasoningTokens?: number;
}

const noop = (): void => {};

/** Reservations held for the request's lifetime (limits); released once at finalize. */
export interface RequestHold {
  release(usage: TokenUsage | undefined): void;
}

export class RequestContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly requestId: string;
  /**
   * A second response header that carries the request id, for the caller's SDK (`x-request-id`,
   * `request-id`); set by the route and written with the head like the other headers (a
   * `setHeader` ahead of `writeHead` makes Node merge and re-validate every header of the head).
   */
  sdkRequestIdHeader: string | undefined = undefined;
  readonly clientIp: string;
  readonly startedAt = performance.now();

  /** Route template for logs and metrics labels (never a raw path). */
  endpoint = 'other';
  /** Final HTTP status; 499 when the client went away first. */
  status = 0;
  errorKind: string | undefined = undefined;
  errorMessage: string | undefined = undefined;

  apiKeyId: string | undefined = undefined;
  apiKeyName: string | undefined = undefined;
  /**
   * The authenticated key's team (`team_id`) and user (`user_name`, else `user_id`), for the
   * team_name / user_name labels: taken at authentication, so a reload that removes or changes
   * the key while the request runs does not change what it is reported under.
   */
  apiKeyTeam: string | undefined = undefined;
  apiKeyUser: string | undefined = undefined;
  /** The caller's model value, as sent. */
  requestedModel: string | undefined = undefined;
  /** The caller's model alias, as resolved (a wildcard alias is reported by its pattern). */
  model: string | undefined = undefined;
  /** Resource id of the model that served (the target, for a group). */
  modelId: string | undefined = undefined;
  provider: string | undefined = undefined;
  upstreamModel: string | undefined = undefined;
  /**
   * The `upstream_model` metric label when `upstreamModel` is the caller's own text (a
   * pass-through body's model): that is logged, never a label value.
   */
  upstreamModelLabel: string | undefined = undefined;
  stream = false;
  /** Usage-event operation (`chat`, `messages`, ...); set by model-serving endpoints only. */
  operation: string | undefined = undefined;
  /** Attempts made upstream, and how many of them went to another target. */
  attempts = 0;
  fallbacks = 0;
  attemptKind: 'initial' | 'retry' | 'fallback' = 'initial';
  usage: TokenUsage | undefined = undefined;
  /** Limit reservations (concurrency slots, token counters) to settle at finalize. */
  limits: RequestHold | undefined = undefined;
  /** Time to the first upstream body byte, ms since start. */
  upstreamFirstByteMs: number | undefined = undefined;
  /** See latencyMs(). */
  private finishedMs: number | undefined = undefined;
  /** When the serving attempt's upstream request was sent, ms since start. */
  upstreamSentMs: number | undefined = undefined;
  /** When the serving attempt's upstream response ended (body read or stream settled), ms since start. */
  upstreamEndMs: number | undefined = undefined;
  /** When the response head went to the caller, ms since start (downstream time to first byte). */
  downstreamFirstByteMs: number | undefined = undefined;
  /** The provider key of the serving attempt. */
  providerKeyId: string | undefined = undefined;
  providerKeyName: string | undefined = undefined;
  /** Name of the rate-limit policy that governed the request (set by the limits phase). */
  policyName: string | undefined = undefined;

  requestBytes = 0;
  responseBytes = 0;
  /**
   * Longest wait for the caller to read any of a response it is sent (0 = none): past it the
   * connection is closed and the request recorded as 499 (`proxy.send_timeout_ms`).
   */
  sendTimeoutMs = 0;
  /** Set for requests that must not be access-logged (health probes). */
  quiet = false;
  /**
   * Set by a handler whose request is decided after the response closes (a pass-through answer
   * whose body is still being decoded for its usage): the finalize hands it the report (access
   * line and metrics), to be run once the request's recorded status and tokens are known, with
   * the usage event's timestamp.
   */
  deferReport: ((report: (time?: string) => void) => void) | undefined = undefined;
  /** Request and response content for `content_mode: full` exporters; undefined when none wants it. */
  capture: ContentCapture | undefined = undefined;

  private gone = false;
  private goneHandlers: Array<() => void> | undefined = undefined;

  constructor(req: IncomingMessage, res: ServerResponse, requestId: string, clientIp: string) {
    this.req = req;
    this.res = res;
    this.requestId = requestId;
    this.clientIp = clientIp;
  }

  /**
   * Run `fn` when the client disconnects before the response finished (at once if it already
   * has). Returns the unsubscribe function. Plain callbacks, not AbortSignal: this runs for
   * every request and EventTarget listeners cost several microseconds.
   */
  onCancel(fn: () => void): () => void {
    if (this.gone) {
      fn();
      return noop;
    }
    const handlers = (this.goneHandlers ??= []);
    handlers.push(fn);
    return () => {
      const i = handlers.indexOf(fn);
      if (i >= 0) handlers.splice(i, 1);
    };
  }

  clientGone(): void {
    if (this.gone) return;
    this.gone = true;
    const handlers = this.goneHandlers;
    this.goneHandlers = undefined;
    if (handlers !== undefined) for (const fn of handlers) fn();
  }

  get clientDisconnected(): boolean {
    return this.gone || (this.res.destroyed && !this.res.writableFinished);
  }

  elapsedMs(): number {
    return performance.now() - this.startedAt;
  }

  /**
   * Request received → response finished: fixed by its first call, at finalize, so that every
   * record of the request (access line, metrics, usage event) carries the same latency.
   */
  latencyMs(): number {
    return (this.finishedMs ??= this.elapsedMs());
  }

  fail(kind: string, message: string): void {
    this.errorKind ??= kind;
    this.errorMessage ??= message;
  }
}
