// The access log: one structured line per answered request, written when the response body
// finishes. It carries attribution and sizes, never a presented credential or a body.
import type { RequestContext } from '../http/context.ts';
import type { Logger } from './logger.ts';
import type { Metrics } from './metrics.ts';

export interface FinalizeSinks {
  logger: Logger;
  metrics: Metrics;
  accessLog: boolean;
}

/** Report a finished request: metrics and the access log line. Called once per request. */
export function reportRequest(ctx: RequestContext, sinks: FinalizeSinks): void {
  if (ctx.quiet) return;
  const provider = ctx.provider ?? 'unknown';
  const model = ctx.model ?? 'unknown';
  const status = String(ctx.status);
  const seconds = ctx.elapsedMs() / 1000;
  sinks.metrics.requestsTotal.inc({ endpoint: ctx.endpoint, provider, model, status });
  sinks.metrics.requestDuration.observe({ endpoint: ctx.endpoint, provider, model, status }, seconds);
  const usage = ctx.usage;
  if (usage !== undefined) {
    if (usage.promptTokens !== undefined) sinks.metrics.tokensTotal.inc({ provider, model, token_type: 'input' }, usage.promptTokens);
    if (usage.completionTokens !== undefined) sinks.metrics.tokensTotal.inc({ provider, model, token_type: 'output' }, usage.completionTokens);
  }
  if (!sinks.accessLog) return;
  sinks.logger.info(
    {
      type: 'access',
      request_id: ctx.requestId,
      method: ctx.req.method,
      path: ctx.endpoint,
      status: ctx.status,
      latency_ms: Math.round(ctx.elapsedMs() * 1000) / 1000,
      upstream_first_byte_ms: ctx.upstreamFirstByteMs === undefined ? undefined : Math.round(ctx.upstreamFirstByteMs * 1000) / 1000,
      client_ip: ctx.clientIp,
      api_key_id: ctx.apiKeyId,
      api_key_name: ctx.apiKeyName,
      model: ctx.model,
      provider: ctx.provider,
      upstream_model: ctx.upstreamModel,
      stream: ctx.stream,
      prompt_tokens: usage?.promptTokens,
      completion_tokens: usage?.completionTokens,
      total_tokens: usage?.totalTokens,
      request_body_bytes: ctx.requestBytes,
      response_body_bytes: ctx.responseBytes,
      error_kind: ctx.errorKind,
      error: ctx.errorMessage,
    },
    'request completed',
  );
}
