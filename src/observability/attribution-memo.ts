// The text of a usage event's attribution, kept for the events that share it. A usage event has
// two kinds of fields: those that say who called what and how it ended (operation, models,
// provider, keys, status, error, attempt kind, route, guardrails, captured headers, embedding
// calls), which repeat from one event to the next for one caller and model; and those that change
// with every event (timestamp, request id, token counts, latencies). The serialisers (usage line,
// OTLP span) make the text of the first kind once per attribution and keep it (KeptValues): ~20
// comparisons instead of escaping and copying ~20 values.
import { KeptValues } from '../lib/kept-values.ts';
import type { GatewayEmbeddingCalls, UsageEvent } from './usage-events.ts';

/**
 * The attribution fields of one event, copied (an event's own object may change after it is
 * emitted); its lists are kept only to tell absent from empty (see sameList).
 */
type Attribution = Pick<UsageEvent, 'operation' | 'requested_model' | 'model_id' | 'provider' | 'provider_key_id' | 'api_key_id' |
  'status' | 'status_code' | 'error_class' | 'error_message' | 'attempt_kind' | 'billable' | 'stream' | 'passthrough_route_name' |
  'client_identity' | 'upstream_model' | 'applied_guardrails' | 'guardrail_blocked' | 'guardrail_blocked_fail_closed' |
  'guardrail_bypassed_reason' | 'guardrail_enforced_hits' | 'guardrail_monitor_hits' | 'gateway_embedding_calls'> & {
  /** The captured headers as name, value, name, value, ... in the event's order; undefined when the event has none. */
  request_headers: string[] | undefined;
};

function attributionOf(e: UsageEvent): Attribution {
  let headers: string[] | undefined;
  if (e.request_headers !== undefined) {
    headers = [];
    for (const name in e.request_headers) headers.push(name, e.request_headers[name]);
  }
  return {
    operation: e.operation,
    requested_model: e.requested_model,
    model_id: e.model_id,
    provider: e.provider,
    provider_key_id: e.provider_key_id,
    api_key_id: e.api_key_id,
    status: e.status,
    status_code: e.status_code,
    error_class: e.error_class,
    error_message: e.error_message,
    attempt_kind: e.attempt_kind,
    billable: e.billable,
    stream: e.stream,
    passthrough_route_name: e.passthrough_route_name,
    client_identity: e.client_identity,
    upstream_model: e.upstream_model,
    applied_guardrails: e.applied_guardrails,
    guardrail_blocked: e.guardrail_blocked,
    guardrail_blocked_fail_closed: e.guardrail_blocked_fail_closed,
    guardrail_bypassed_reason: e.guardrail_bypassed_reason,
    guardrail_enforced_hits: e.guardrail_enforced_hits,
    guardrail_monitor_hits: e.guardrail_monitor_hits,
    request_headers: headers,
    gateway_embedding_calls: e.gateway_embedding_calls,
  };
}

/**
 * Lists are the same when both are absent or both empty (the events' "none"): a list with items
 * (guardrail hits, embedding calls) always makes the text again, so a list changed in place after
 * it was seen can never bring back the text of its former items.
 */
const sameList = (a: readonly unknown[] | undefined, b: readonly unknown[] | undefined): boolean =>
  a === undefined || b === undefined ? a === b : a.length === 0 && b.length === 0;

function sameHeaders(kept: string[] | undefined, h: Record<string, string> | undefined): boolean {
  if (kept === undefined || h === undefined) return kept === h;
  let i = 0;
  for (const name in h) {
    if (kept[i] !== name || kept[i + 1] !== h[name]) return false;
    i += 2;
  }
  return i === kept.length;
}

function sameEmbeddingCalls(a: GatewayEmbeddingCalls | undefined, b: GatewayEmbeddingCalls | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.calls.length === 0 && b.calls.length === 0 && a.dropped === b.dropped;
}

function sameAttribution(a: Attribution, e: UsageEvent): boolean {
  return a.operation === e.operation && a.requested_model === e.requested_model && a.model_id === e.model_id &&
    a.provider === e.provider && a.provider_key_id === e.provider_key_id && a.api_key_id === e.api_key_id &&
    a.status === e.status && a.status_code === e.status_code && a.error_class === e.error_class &&
    a.error_message === e.error_message && a.attempt_kind === e.attempt_kind && a.billable === e.billable &&
    a.stream === e.stream && a.passthrough_route_name === e.passthrough_route_name &&
    a.client_identity === e.client_identity && a.upstream_model === e.upstream_model &&
    sameList(a.applied_guardrails, e.applied_guardrails) && a.guardrail_blocked === e.guardrail_blocked &&
    a.guardrail_blocked_fail_closed === e.guardrail_blocked_fail_closed &&
    a.guardrail_bypassed_reason === e.guardrail_bypassed_reason &&
    sameList(a.guardrail_enforced_hits, e.guardrail_enforced_hits) &&
    sameList(a.guardrail_monitor_hits, e.guardrail_monitor_hits) && sameHeaders(a.request_headers, e.request_headers) &&
    sameEmbeddingCalls(a.gateway_embedding_calls, e.gateway_embedding_calls);
}

/** Attributions kept per serialiser: enough for the callers and models of a busy minute to take turns. */
export const KEPT_ATTRIBUTIONS = 8;

/**
 * What `make` returns for an event's attribution fields, made again only for an attribution not
 * among the last KEPT_ATTRIBUTIONS. `make` must read no other field of the event.
 */
export function attributionMemo<T>(make: (e: UsageEvent) => T): KeptValues<UsageEvent, Attribution, T> {
  return new KeptValues(KEPT_ATTRIBUTIONS, sameAttribution, attributionOf, make);
}
