// RequestContext: the typed state one data-plane request carries through its phases, and the
// fields the finalize phase reports (access log, metrics).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';

export interface TokenUsage {
  promptTokens?: number;
  completionTokens?: number;
  totalTokens?: number;
  cachedTokens?: number;
  reasoningTokens?: number;
}

export class RequestContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly requestId: string;
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
  /** The caller's model alias, as resolved (a wildcard alias is reported by its pattern). */
  model: string | undefined = undefined;
  provider: string | undefined = undefined;
  upstreamModel: string | undefined = undefined;
  stream = false;
  usage: TokenUsage | undefined = undefined;
  /** Time to the first upstream body byte, ms since start. */
  upstreamFirstByteMs: number | undefined = undefined;

  requestBytes = 0;
  responseBytes = 0;
  /** Set for requests that must not be access-logged (health probes). */
  quiet = false;

  private abortController: AbortController | undefined = undefined;

  constructor(req: IncomingMessage, res: ServerResponse, requestId: string, clientIp: string) {
    this.req = req;
    this.res = res;
    this.requestId = requestId;
    this.clientIp = clientIp;
  }

  /** Aborted when the client disconnects before the response finished. */
  get signal(): AbortSignal {
    this.abortController ??= new AbortController();
    return this.abortController.signal;
  }

  clientGone(): void {
    this.abortController?.abort();
  }

  get clientDisconnected(): boolean {
    return this.abortController?.signal.aborted === true || (this.res.destroyed && !this.res.writableFinished);
  }

  elapsedMs(): number {
    return performance.now() - this.startedAt;
  }

  fail(kind: string, message: string): void {
    this.errorKind ??= kind;
    this.errorMessage ??= message;
  }
}
