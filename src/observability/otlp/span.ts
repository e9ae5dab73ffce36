// Usage events as OTLP spans (OTLP/HTTP JSON encoding): one span per event, its end time the
// event's occurred_at, its start that minus the request's latency. GenAI semantic-convention
// attributes where they fit (gen_ai.*, http.*, error.type), every other event field as
// `tollgate.<field>`, and captured request headers as `http.request.header.<name>`. Content
// (full-mode exporters only) as `tollgate.content.request`, `tollgate.content.response` and
// `tollgate.content.truncated`.
import { createHash, randomBytes } from 'node:crypto';
import type { CapturedContent } from '../content-text.ts';
import type { UsageEvent } from '../usage-events.ts';

export interface OtlpAnyValue {
  stringValue?: string;
  intValue?: string;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values: OtlpAnyValue[] };
}

export interface OtlpAttribute {
  key: string;
  value: OtlpAnyValue;
}

export interface OtlpSpan {
  traceId: string;
  spanId: string;
  name: string;
  /** 2 = SPAN_KIND_SERVER: the gateway answering a caller. */
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: OtlpAttribute[];
  /** code 2 = STATUS_CODE_ERROR; unset (0) otherwise. */
  status: { code: number; message?: string };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const LOWER_HEX = /^[0-9a-f]*$/;

/** The trace of a request: its UUID request id as 32 hex digits, or a digest of any other id. */
export function traceIdFor(requestId: string): string {
  if (UUID.test(requestId)) {
    const hex = requestId.slice(0, 8) + requestId.slice(9, 13) + requestId.slice(14, 18) + requestId.slice(19, 23) + requestId.slice(24);
    return LOWER_HEX.test(hex) ? hex : hex.toLowerCase();
  }
  return createHash('sha256').update(requestId).digest('hex').slice(0, 32);
}

/** GenAI operation names (gen_ai.operation.name) for Tollgate operations. */
const GENAI_OPERATION: Readonly<Record<string, string>> = {
  chat: 'chat',
  messages: 'chat',
  completions: 'text_completion',
  embeddings: 'embeddings',
};

/**
 * Every event field, in export order: true when it becomes a `tollgate.<field>` attribute, false
 * when a semantic-convention attribute (or the span itself) carries it. A Record over the event's
 * keys, so a field added to UsageEvent must be placed here.
 */
const EXPORTED_FIELDS: Readonly<Record<keyof UsageEvent, boolean>> = {
  type: false,
  occurred_at: false,
  request_id: true,
  operation: false,
  requested_model: false,
  model_id: true,
  provider: false,
  provider_key_id: true,
  api_key_id: true,
  status: false,
  status_code: false,
  error_class: false,
  error_message: true,
  attempt_kind: true,
  billable: true,
  stream: true,
  prompt_tokens: true,
  completion_tokens: true,
  total_tokens: true,
  cached_tokens: true,
  cache_creation_tokens: true,
  reasoning_tokens: true,
  latency_ms: true,
  ttft_ms: true,
  passthrough_route_name: true,
  client_identity: true,
  upstream_model: false,
  downstream_latency_ms: true,
  downstream_ttft_ms: true,
  upstream_latency_ms: true,
  upstream_ttft_ms: true,
  applied_guardrails: true,
  guardrail_blocked: true,
  guardrail_blocked_fail_closed: true,
  guardrail_bypassed_reason: true,
  guardrail_enforced_hits: true,
  guardrail_monitor_hits: true,
  request_headers: false,
  gateway_embedding_calls: true,
};

/** `{"key":"tollgate.<field>","value":` and the field, for each exported field (made once). */
const FIELD_PREFIXES: ReadonlyArray<readonly [keyof UsageEvent, string]> = (Object.keys(EXPORTED_FIELDS) as (keyof UsageEvent)[])
  .filter((f) => EXPORTED_FIELDS[f])
  .map((f) => [f, prefix(`tollgate.${f}`)]);

function prefix(key: string): string {
  return `{"key":${JSON.stringify(key)},"value":`;
}

const P_OPERATION = prefix('gen_ai.operation.name');
const P_PROVIDER = prefix('gen_ai.provider.name');
const P_SYSTEM = prefix('gen_ai.system');
const P_REQUEST_MODEL = prefix('gen_ai.request.model');
const P_RESPONSE_MODEL = prefix('gen_ai.response.model');
const P_INPUT_TOKENS = prefix('gen_ai.usage.input_tokens');
const P_OUTPUT_TOKENS = prefix('gen_ai.usage.output_tokens');
const P_STATUS = prefix('http.response.status_code');
const P_ERROR_TYPE = prefix('error.type');
const P_TOLLGATE_OPERATION = prefix('tollgate.operation');
const P_CONTENT_REQUEST = prefix('tollgate.content.request');
const P_CONTENT_RESPONSE = prefix('tollgate.content.response');
const P_CONTENT_TRUNCATED = prefix('tollgate.content.truncated');

/** Attribute prefixes of captured request headers, by header name (a configured, fixed set). */
const headerPrefixes = new Map<string, string>();
function headerPrefix(name: string): string {
  let p = headerPrefixes.get(name);
  if (p === undefined) {
    p = prefix(`http.request.header.${name}`);
    headerPrefixes.set(name, p);
  }
  return p;
}

/** A character that JSON must escape, or any non-ASCII one (left to JSON.stringify). */
const NEEDS_ESCAPE = /["\\\u0000-\u001f\u007f-\uffff]/;

/** `v` as a JSON string literal: quoted as is when nothing needs escaping (the common case). */
function quote(v: string): string {
  return NEEDS_ESCAPE.test(v) ? JSON.stringify(v) : '"' + v + '"';
}

/**
 * One attribute as OTLP JSON text, `prefix` being `{"key":<key>,"value":`; '' for a value that
 * carries nothing: null, undefined, a non-finite number, an empty list, or an object whose
 * members are all empty lists or zero (gateway_embedding_calls without calls).
 */
function attribute(prefix: string, v: unknown): string {
  switch (typeof v) {
    case 'string':
      return prefix + '{"stringValue":' + quote(v) + '}},';
    case 'boolean':
      return v ? prefix + '{"boolValue":true}},' : prefix + '{"boolValue":false}},';
    case 'number':
      if (!Number.isFinite(v)) return '';
      return Number.isInteger(v) ? prefix + '{"intValue":"' + v + '"}},' : prefix + '{"doubleValue":' + v + '}},';
    case 'object':
      // Lists and maps (guardrail hits, embedding calls) travel as their JSON text.
      return v === null || isEmpty(v) ? '' : prefix + '{"stringValue":' + JSON.stringify(JSON.stringify(v)) + '}},';
    default:
      return '';
  }
}

function isEmpty(v: object): boolean {
  if (Array.isArray(v)) return v.length === 0;
  for (const k in v) {
    const m = (v as Record<string, unknown>)[k];
    if (!(Array.isArray(m) ? m.length === 0 : m === 0)) return false;
  }
  return true;
}

/** Span ids: 8 random bytes each, drawn from one pool refilled 512 ids at a time. */
let idPool = '';
let idAt = 0;
function spanId(): string {
  if (idAt >= idPool.length) {
    idPool = randomBytes(8 * 512).toString('hex');
    idAt = 0;
  }
  idAt += 16;
  return idPool.slice(idAt - 16, idAt);
}

/** Date.parse of the last occurred_at seen: consecutive events often share their millisecond. */
let lastTimeText = '';
let lastTimeMs = 0;
function parseTime(text: string): number {
  if (text !== lastTimeText) {
    lastTimeMs = Date.parse(text);
    lastTimeText = text;
  }
  return lastTimeMs;
}

/**
 * The span of one usage event as OTLP/HTTP JSON text. It runs for every exported event, so it is
 * one string built by concatenation from fixed pieces (no span object, no per-attribute arrays or
 * JSON.stringify calls for plain values). `content` (already trimmed to the exporter's cap) adds
 * the content attributes.
 */
export function usageEventSpanJson(e: UsageEvent, content?: CapturedContent): string {
  const genaiOperation = GENAI_OPERATION[e.operation] ?? e.operation;
  // Every attribute ends with a comma; the last one is cut when the list is closed.
  let a = attribute(P_OPERATION, genaiOperation);
  if (e.provider !== null) a += attribute(P_PROVIDER, e.provider) + attribute(P_SYSTEM, e.provider);
  if (e.requested_model !== '') a += attribute(P_REQUEST_MODEL, e.requested_model);
  if (e.upstream_model !== undefined && e.upstream_model !== null) a += attribute(P_RESPONSE_MODEL, e.upstream_model);
  if (e.prompt_tokens !== null) a += attribute(P_INPUT_TOKENS, e.prompt_tokens);
  if (e.completion_tokens !== null) a += attribute(P_OUTPUT_TOKENS, e.completion_tokens);
  a += attribute(P_STATUS, e.status);
  if (e.error_class !== null) a += attribute(P_ERROR_TYPE, e.error_class);
  a += attribute(P_TOLLGATE_OPERATION, e.operation);
  for (let i = 0; i < FIELD_PREFIXES.length; i++) {
    const [field, p] = FIELD_PREFIXES[i];
    a += attribute(p, e[field]);
  }
  const headers = e.request_headers;
  if (headers !== undefined) {
    for (const name in headers) {
      a += headerPrefix(name) + '{"arrayValue":{"values":[{"stringValue":' + quote(headers[name]) + '}]}}},';
    }
  }
  if (content !== undefined) {
    a += attribute(P_CONTENT_REQUEST, content.request) + attribute(P_CONTENT_RESPONSE, content.response) + attribute(P_CONTENT_TRUNCATED, content.truncated);
  }
  // Nanoseconds as decimal strings without BigInt: whole microseconds fit a double exactly.
  const endUs = parseTime(e.occurred_at) * 1000;
  const startUs = endUs - Math.round(Math.max(0, e.latency_ms) * 1000);
  const name = e.requested_model === '' ? genaiOperation : genaiOperation + ' ' + e.requested_model;
  const status = e.status >= 400 ? '{"code":2,"message":' + quote(e.error_message ?? `status ${e.status}`) + '}' : '{"code":0}';
  return (
    '{"traceId":"' + traceIdFor(e.request_id) + '","spanId":"' + spanId() + '","name":' + quote(name) +
    ',"kind":2,"startTimeUnixNano":"' + startUs + '000","endTimeUnixNano":"' + endUs + '000","attributes":[' +
    a.slice(0, -1) + '],"status":' + status + '}'
  );
}

/** An ExportTraceServiceRequest holding `spans` (each the JSON text of one span), as JSON text. */
export function exportRequestJson(spans: readonly string[], serviceName: string, version: string): string {
  const resource = `{"attributes":[{"key":"service.name","value":{"stringValue":${JSON.stringify(serviceName)}}}]}`;
  const scope = `{"name":"tollgate.usage","version":${JSON.stringify(version)}}`;
  return `{"resourceSpans":[{"resource":${resource},"scopeSpans":[{"scope":${scope},"spans":[${spans.join(',')}]}]}]}`;
}
