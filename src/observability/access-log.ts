// The access log: one structured line per answered request, written when the response body
// finishes. It carries attribution and sizes, never a presented credential or a body.
// The line has the shape of the process log (level, time, service, msg) so one pipeline reads
// both; it is serialised in one JSON.stringify call because it runs for every request.
import type { RequestContext } from '../http/context.ts';
import { lineWriter, type Logger } from './logger.ts';
import type { Metrics } from './metrics.ts';

export interface FinalizeSinks {
  metrics: Metrics;
  /** Undefined when the access log is off (config, or a log level above info). */
  accessLog: ((line: string) => void) | undefined;
}

export function createFinalizeSinks(logger: Logger, metrics: Metrics, accessLog: boolean): FinalizeSinks {
  return { metrics, accessLog: accessLog && logger.isLevelEnabled('info') ? lineWriter(logger) : undefined };
}

const ms = (v: number | undefined): number | undefined => (v === undefined ? undefined : Math.round(v * 1000) / 1000);

/** Report a finished request: metrics and the access log line. Called once per request. */
export function reportRequest(ctx: RequestContext, sinks: FinalizeSinks): void {
  if (ctx.quiet) return;
  const provider = ctx.provider ?? 'unknown';
  const model = ctx.model ?? 'unknown';
  const elapsed = ctx.elapsedMs();
  sinks.metrics.observeRequest(ctx.endpoint, provider, model, ctx.status, elapsed / 1000);
  const usage = ctx.usage;
  if (usage !== undefined) {
    if (usage.promptTokens !== undefined) sinks.metrics.tokensTotal.inc({ provider, model, token_type: 'input' }, usage.promptTokens);
    if (usage.completionTokens !== undefined) sinks.metrics.tokensTotal.inc({ provider, model, token_type: 'output' }, usage.completionTokens);
  }
  if (sinks.accessLog === undefined) return;
  const line = JSON.stringify({
    level: 'info',
    time: new Date().toISOString(),
    service: 'tollgate',
    type: 'access',
    request_id: ctx.requestId,
    method: ctx.req.method,
    path: ctx.endpoint,
    status: ctx.status,
    latency_ms: ms(elapsed),
    upstream_first_byte_ms: ms(ctx.upstreamFirstByteMs),
    client_ip: ctx.clientIp,
    api_key_id: ctx.apiKeyId,
    api_key_name: ctx.apiKeyName,
    model: ctx.model,
    provider: ctx.provider,
    upstream_model: ctx.upstreamModel,
    stream: ctx.stream,
    attempts: ctx.attempts,
    fallbacks: ctx.fallbacks,
    prompt_tokens: usage?.promptTokens,
    completion_tokens: usage?.completionTokens,
    total_tokens: usage?.totalTokens,
    request_body_bytes: ctx.requestBytes,
    response_body_bytes: ctx.responseBytes,
    error_kind: ctx.errorKind,
    error: ctx.errorMessage,
    msg: 'request completed',
  });
  sinks.accessLog(line + '\n');
}
