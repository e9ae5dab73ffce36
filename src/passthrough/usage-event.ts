// The usage event of a pass-through request (spec 3 §6): operation `passthrough`, the route and
// caller, the body's model for recognised shapes, token counts, client_identity, and an empty
// model_id (no cost, no budget spend).
import { roundMs, spanMs, storedTotal, type UsageEvent } from '../observability/usage-events.ts';
import type { TokenCounts } from './token-counts.ts';

export interface PassthroughUsage {
  readonly requestId: string;
  readonly routeName: string;
  readonly requestedModel: string;
  readonly provider: string | null;
  readonly providerKeyId: string | null;
  readonly apiKeyId: string | null;
  readonly status: number;
  readonly errorClass: string | null;
  readonly errorMessage: string | null;
  /** The upstream was contacted. */
  readonly dispatched: boolean;
  readonly stream: boolean;
  readonly tokens: TokenCounts | undefined;
  readonly latencyMs: number;
  /** Instants in ms since the request started, as the request context holds them. */
  readonly upstreamSentMs: number | undefined;
  readonly upstreamFirstByteMs: number | undefined;
  readonly upstreamEndMs: number | undefined;
  readonly downstreamFirstByteMs: number | undefined;
  readonly clientIdentity: string | null;
}

/** `occurredAt`: the row's time, as Date#toISOString writes it. */
export function passthroughUsageEvent(u: PassthroughUsage, occurredAt: string): UsageEvent {
  const t = u.tokens;
  return {
    type: 'usage',
    occurred_at: occurredAt,
    request_id: u.requestId,
    operation: 'passthrough',
    requested_model: u.requestedModel,
    model_id: '',
    provider: u.provider,
    provider_key_id: u.providerKeyId,
    api_key_id: u.apiKeyId,
    status: u.status,
    status_code: u.status,
    error_class: u.errorClass,
    error_message: u.errorMessage,
    attempt_kind: 'initial',
    // As for model rows: only a 2xx the upstream answered is billable.
    billable: u.dispatched && u.status >= 200 && u.status < 300,
    stream: u.stream,
    prompt_tokens: t?.prompt ?? null,
    completion_tokens: t?.completion ?? null,
    total_tokens: storedTotal(t?.total),
    cached_tokens: t?.cached ?? null,
    cache_creation_tokens: t?.cacheCreation ?? null,
    reasoning_tokens: t?.reasoning ?? null,
    latency_ms: roundMs(u.latencyMs),
    ttft_ms: u.upstreamFirstByteMs === undefined ? null : roundMs(u.upstreamFirstByteMs),
    passthrough_route_name: u.routeName,
    client_identity: u.clientIdentity,
    // The body goes upstream as sent: its model is the one the upstream is asked for.
    upstream_model: u.requestedModel === '' ? null : u.requestedModel,
    downstream_ttft_ms: u.downstreamFirstByteMs === undefined ? null : roundMs(u.downstreamFirstByteMs),
    upstream_latency_ms: spanMs(u.upstreamSentMs, u.upstreamEndMs),
    upstream_ttft_ms: spanMs(u.upstreamSentMs, u.upstreamFirstByteMs),
  };
}
