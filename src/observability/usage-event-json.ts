// The JSON line of a usage event: the text the stderr and file sinks write, encoded once for
// both. It is the text JSON.stringify writes for the event, with the fields in one fixed order,
// built as template literals (fewer instructions than JSON.stringify for this record, which is
// written for every model-serving request): the attribution members once per attribution and
// kept (attribution-memo.ts), the rest for each event. Optional members an event does not have
// are left out, as JSON.stringify leaves out undefined members.
import { jsonList, jsonMap, jsonNumber, jsonString, jsonStringOrNull } from '../lib/json-text.ts';
import { attributionMemo } from './attribution-memo.ts';
import type { GatewayEmbeddingCalls, UsageEvent } from './usage-events.ts';

/**
 * The event's members without the enclosing braces: the file line wraps them in `{}`, the log
 * line adds its own fields around them. The attribution members are made once per attribution
 * and kept (attributionMemo); the rest is written for each event.
 */
export function usageEventMembers(e: UsageEvent): string {
  const a = attribution.get(e);
  return `"type":"usage","occurred_at":${jsonString(e.occurred_at)},"request_id":${jsonString(e.request_id)},${a.head}\
"prompt_tokens":${jsonNumber(e.prompt_tokens)},"completion_tokens":${jsonNumber(e.completion_tokens)},"total_tokens":${jsonNumber(e.total_tokens)},\
"cached_tokens":${jsonNumber(e.cached_tokens)},"cache_creation_tokens":${jsonNumber(e.cache_creation_tokens)},\
"reasoning_tokens":${jsonNumber(e.reasoning_tokens)},"latency_ms":${jsonNumber(e.latency_ms)},"ttft_ms":${jsonNumber(e.ttft_ms)},${a.route}\
${e.downstream_latency_ms === undefined ? '' : `,"downstream_latency_ms":${jsonNumber(e.downstream_latency_ms)}`}\
${e.downstream_ttft_ms === undefined ? '' : `,"downstream_ttft_ms":${jsonNumber(e.downstream_ttft_ms)}`}\
${e.upstream_latency_ms === undefined ? '' : `,"upstream_latency_ms":${jsonNumber(e.upstream_latency_ms)}`}\
${e.upstream_ttft_ms === undefined ? '' : `,"upstream_ttft_ms":${jsonNumber(e.upstream_ttft_ms)}`}${a.tail}`;
}

/** The attribution members, in three runs between the per-event ones. */
interface AttributionText {
  /** `operation` to `stream`, with a trailing comma. */
  head: string;
  /** `passthrough_route_name`, `client_identity` and (when present) `upstream_model`. */
  route: string;
  /** The guardrail fields, `request_headers` and `gateway_embedding_calls`, each when present. */
  tail: string;
}

const attribution = attributionMemo<AttributionText>((e) => ({
  head: `"operation":${jsonString(e.operation)},"requested_model":${jsonString(e.requested_model)},"model_id":${jsonString(e.model_id)},\
"provider":${jsonStringOrNull(e.provider)},"provider_key_id":${jsonStringOrNull(e.provider_key_id)},"api_key_id":${jsonStringOrNull(e.api_key_id)},\
"status":${jsonNumber(e.status)},"status_code":${jsonNumber(e.status_code)},"error_class":${jsonStringOrNull(e.error_class)},\
"error_message":${jsonStringOrNull(e.error_message)},"attempt_kind":${jsonString(e.attempt_kind)},"billable":${e.billable},"stream":${e.stream},`,
  route: `"passthrough_route_name":${jsonStringOrNull(e.passthrough_route_name)},"client_identity":${jsonStringOrNull(e.client_identity)}\
${e.upstream_model === undefined ? '' : `,"upstream_model":${jsonStringOrNull(e.upstream_model)}`}`,
  tail: `${e.applied_guardrails === undefined ? '' : `,"applied_guardrails":${jsonList(e.applied_guardrails)}`}\
${e.guardrail_blocked === undefined ? '' : `,"guardrail_blocked":${e.guardrail_blocked}`}\
${e.guardrail_blocked_fail_closed === undefined ? '' : `,"guardrail_blocked_fail_closed":${e.guardrail_blocked_fail_closed}`}\
${e.guardrail_bypassed_reason === undefined ? '' : `,"guardrail_bypassed_reason":${jsonStringOrNull(e.guardrail_bypassed_reason)}`}\
${e.guardrail_enforced_hits === undefined ? '' : `,"guardrail_enforced_hits":${jsonList(e.guardrail_enforced_hits)}`}\
${e.guardrail_monitor_hits === undefined ? '' : `,"guardrail_monitor_hits":${jsonList(e.guardrail_monitor_hits)}`}\
${e.request_headers === undefined ? '' : `,"request_headers":${jsonMap(e.request_headers)}`}\
${e.gateway_embedding_calls === undefined ? '' : `,"gateway_embedding_calls":${embeddingCalls(e.gateway_embedding_calls)}`}`,
}));

const embeddingCalls = (v: GatewayEmbeddingCalls): string =>
  (v.calls.length === 0 && v.dropped === 0 ? '{"calls":[],"dropped":0}' : JSON.stringify(v));

/** Where the members of the last emitted event are encoded; grows (and stays grown) for long events. */
let scratch = Buffer.allocUnsafe(8192);
let lastEvent: UsageEvent | undefined;
let lastBytes: Uint8Array = scratch.subarray(0, 0);

/**
 * The members of an emitted event as UTF-8, shared by the sinks that write it (stderr, file): the
 * emitter hands one event to every sink in turn, so a one-event memo serialises and encodes it
 * once. The bytes are a view that the next event's overwrite: sinks copy them at once.
 */
export function usageEventMembersBytes(event: UsageEvent): Uint8Array {
  if (event !== lastEvent) {
    const text = usageEventMembers(event);
    if (text.length * 3 > scratch.length) scratch = Buffer.allocUnsafe(text.length * 3);
    lastBytes = scratch.subarray(0, scratch.write(text, 0));
    lastEvent = event;
  }
  return lastBytes;
}
