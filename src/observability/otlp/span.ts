// Usage events as OTLP spans (OTLP/HTTP JSON encoding): one span per event, its end time the
// event's occurred_at, its start that minus the request's latency. GenAI semantic-convention
// attributes where they fit (gen_ai.*, http.*, error.type), every other event field as
// `tollgate.<field>`, and captured request headers as `http.request.header.<name>`. Content
// (full-mode exporters only) as `tollgate.content.request`, `tollgate.content.response` and
// `tollgate.content.truncated`.
//
// A span is written as UTF-8 bytes straight into one reused buffer (JsonBytes): each attribute's
// key and value opening are one constant made once, strings are copied character by character
// when JSON needs no escape for them (ids, names, models: the common case), and nothing else is
// left behind. With ~40 constant pieces a span, this costs about half the instructions of the
// same text built as one template literal (`npm run bench:serialisers`).
import { createHash, randomBytes } from 'node:crypto';
import { JsonBytes, jsonText } from '../../lib/json-bytes.ts';
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
 * keys, so a field added to UsageEvent must be placed here; encodeUsageEventSpan reads the fields
 * one by one, and a test checks that every field marked true reaches the span.
 */
export const EXPORTED_FIELDS: Readonly<Record<keyof UsageEvent, boolean>> = {
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

/**
 * One attribute key's text, made once: `,{"key":<key>,"value":` followed by the opening of each
 * value kind. The leading comma separates it from the attribute before; the first attribute of
 * a span (the operation name, always there) is written without it (FIRST_OPERATION).
 */
interface AttributeKey {
  str: Uint8Array;
  int: Uint8Array;
  dbl: Uint8Array;
  yes: Uint8Array;
  no: Uint8Array;
  header: Uint8Array;
}

function attributeKey(key: string): AttributeKey {
  const head = `,{"key":${JSON.stringify(key)},"value":`;
  return {
    str: jsonText(`${head}{"stringValue":`),
    int: jsonText(`${head}{"intValue":"`),
    dbl: jsonText(`${head}{"doubleValue":`),
    yes: jsonText(`${head}{"boolValue":true}}`),
    no: jsonText(`${head}{"boolValue":false}}`),
    header: jsonText(`${head}{"arrayValue":{"values":[{"stringValue":`),
  };
}

/** The `tollgate.<field>` attribute keys of the exported fields. */
const T = Object.fromEntries(
  (Object.keys(EXPORTED_FIELDS) as (keyof UsageEvent)[]).filter((f) => EXPORTED_FIELDS[f]).map((f) => [f, attributeKey(`tollgate.${f}`)]),
) as Record<keyof UsageEvent, AttributeKey>;

const A_OPERATION = attributeKey('gen_ai.operation.name');
const FIRST_OPERATION = A_OPERATION.str.subarray(1);
const A_PROVIDER = attributeKey('gen_ai.provider.name');
const A_SYSTEM = attributeKey('gen_ai.system');
const A_REQUEST_MODEL = attributeKey('gen_ai.request.model');
const A_RESPONSE_MODEL = attributeKey('gen_ai.response.model');
const A_INPUT_TOKENS = attributeKey('gen_ai.usage.input_tokens');
const A_OUTPUT_TOKENS = attributeKey('gen_ai.usage.output_tokens');
const A_STATUS = attributeKey('http.response.status_code');
const A_ERROR_TYPE = attributeKey('error.type');
const A_TOLLGATE_OPERATION = attributeKey('tollgate.operation');
const A_CONTENT_REQUEST = attributeKey('tollgate.content.request');
const A_CONTENT_RESPONSE = attributeKey('tollgate.content.response');
const A_CONTENT_TRUNCATED = attributeKey('tollgate.content.truncated');

const CLOSE = jsonText('}}');
const QUOTE_CLOSE = jsonText('"}}');
const HEADER_CLOSE = jsonText('}]}}}');
const TRACE_ID = jsonText('{"traceId":"');
const SPAN_ID = jsonText('","spanId":"');
const NAME = jsonText('","name":');
const START = jsonText(',"kind":2,"startTimeUnixNano":"');
const END = jsonText('000","endTimeUnixNano":"');
const ATTRIBUTES = jsonText('000","attributes":[');
const STATUS_OK = jsonText('],"status":{"code":0}}');
const STATUS_ERROR = jsonText('],"status":{"code":2,"message":');

/** Attribute keys of captured request headers, by header name (a configured, fixed set). */
const headerKeys = new Map<string, AttributeKey>();
function headerKey(name: string): AttributeKey {
  let k = headerKeys.get(name);
  if (k === undefined) {
    k = attributeKey(`http.request.header.${name}`);
    headerKeys.set(name, k);
  }
  return k;
}

/** The span being written; its buffer grows (and stays grown) for large content. */
const w = new JsonBytes(16 * 1024);

/** A string attribute; nothing for null or undefined. */
function str(k: AttributeKey, v: string | null | undefined): void {
  if (v === null || v === undefined) return;
  w.raw(k.str);
  w.str(v);
  w.raw(CLOSE);
}

/** A number attribute (intValue for integers); nothing for null, undefined or a non-finite number. */
function num(k: AttributeKey, v: number | null | undefined): void {
  if (v === null || v === undefined || !Number.isFinite(v)) return;
  if (Number.isInteger(v)) {
    w.raw(k.int);
    w.num(v);
    w.raw(QUOTE_CLOSE);
  } else {
    w.raw(k.dbl);
    w.num(v);
    w.raw(CLOSE);
  }
}

function bool(k: AttributeKey, v: boolean | undefined): void {
  if (v !== undefined) w.raw(v ? k.yes : k.no);
}

/**
 * A list or map (guardrail hits, embedding calls) as its JSON text; nothing when it is empty, or
 * an object whose members are all empty lists or zero (gateway_embedding_calls without calls).
 */
function object(k: AttributeKey, v: object | undefined): void {
  if (v === undefined || isEmpty(v)) return;
  w.raw(k.str);
  w.str(JSON.stringify(v));
  w.raw(CLOSE);
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
 * The span of one usage event as OTLP/HTTP JSON, UTF-8 encoded. The bytes are a view of a buffer
 * that the next call overwrites: copy them before encoding another span. `content` (already
 * trimmed to the exporter's cap) adds the content attributes. Fields are read one by one (not
 * through the EXPORTED_FIELDS keys): a keyed read per field costs more than the field's text.
 */
export function encodeUsageEventSpan(e: UsageEvent, content?: CapturedContent): Buffer {
  w.reset();
  const genaiOperation = GENAI_OPERATION[e.operation] ?? e.operation;
  // Nanoseconds as decimal strings without BigInt: whole microseconds fit a double exactly.
  const endUs = parseTime(e.occurred_at) * 1000;
  const startUs = endUs - Math.round(Math.max(0, e.latency_ms) * 1000);
  w.raw(TRACE_ID);
  w.ascii(traceIdFor(e.request_id));
  w.raw(SPAN_ID);
  w.ascii(spanId());
  w.raw(NAME);
  w.str(e.requested_model === '' ? genaiOperation : genaiOperation + ' ' + e.requested_model);
  w.raw(START);
  w.num(startUs);
  w.raw(END);
  w.num(endUs);
  w.raw(ATTRIBUTES);
  w.raw(FIRST_OPERATION);
  w.str(genaiOperation);
  w.raw(CLOSE);
  if (e.provider !== null) {
    str(A_PROVIDER, e.provider);
    str(A_SYSTEM, e.provider);
  }
  if (e.requested_model !== '') str(A_REQUEST_MODEL, e.requested_model);
  str(A_RESPONSE_MODEL, e.upstream_model);
  num(A_INPUT_TOKENS, e.prompt_tokens);
  num(A_OUTPUT_TOKENS, e.completion_tokens);
  num(A_STATUS, e.status);
  str(A_ERROR_TYPE, e.error_class);
  str(A_TOLLGATE_OPERATION, e.operation);
  str(T.request_id, e.request_id);
  str(T.model_id, e.model_id);
  str(T.provider_key_id, e.provider_key_id);
  str(T.api_key_id, e.api_key_id);
  str(T.error_message, e.error_message);
  str(T.attempt_kind, e.attempt_kind);
  bool(T.billable, e.billable);
  bool(T.stream, e.stream);
  num(T.prompt_tokens, e.prompt_tokens);
  num(T.completion_tokens, e.completion_tokens);
  num(T.total_tokens, e.total_tokens);
  num(T.cached_tokens, e.cached_tokens);
  num(T.cache_creation_tokens, e.cache_creation_tokens);
  num(T.reasoning_tokens, e.reasoning_tokens);
  num(T.latency_ms, e.latency_ms);
  num(T.ttft_ms, e.ttft_ms);
  str(T.passthrough_route_name, e.passthrough_route_name);
  str(T.client_identity, e.client_identity);
  num(T.downstream_latency_ms, e.downstream_latency_ms);
  num(T.downstream_ttft_ms, e.downstream_ttft_ms);
  num(T.upstream_latency_ms, e.upstream_latency_ms);
  num(T.upstream_ttft_ms, e.upstream_ttft_ms);
  object(T.applied_guardrails, e.applied_guardrails);
  bool(T.guardrail_blocked, e.guardrail_blocked);
  bool(T.guardrail_blocked_fail_closed, e.guardrail_blocked_fail_closed);
  str(T.guardrail_bypassed_reason, e.guardrail_bypassed_reason);
  object(T.guardrail_enforced_hits, e.guardrail_enforced_hits);
  object(T.guardrail_monitor_hits, e.guardrail_monitor_hits);
  object(T.gateway_embedding_calls, e.gateway_embedding_calls);
  const headers = e.request_headers;
  if (headers !== undefined) {
    for (const name in headers) {
      w.raw(headerKey(name).header);
      w.str(headers[name]);
      w.raw(HEADER_CLOSE);
    }
  }
  if (content !== undefined) {
    str(A_CONTENT_REQUEST, content.request);
    str(A_CONTENT_RESPONSE, content.response);
    bool(A_CONTENT_TRUNCATED, content.truncated);
  }
  if (e.status >= 400) {
    w.raw(STATUS_ERROR);
    w.str(e.error_message ?? `status ${e.status}`);
    w.raw(CLOSE);
  } else {
    w.raw(STATUS_OK);
  }
  return w.view();
}

/**
 * The UTF-8 text around the spans of an ExportTraceServiceRequest (one resource, one scope):
 * an export body is `head`, the spans joined by commas, then `tail`.
 */
export function exportRequestFrame(serviceName: string, version: string): { head: Buffer; tail: Buffer } {
  const resource = `{"attributes":[{"key":"service.name","value":{"stringValue":${JSON.stringify(serviceName)}}}]}`;
  const scope = `{"name":"tollgate.usage","version":${JSON.stringify(version)}}`;
  return {
    head: Buffer.from(`{"resourceSpans":[{"resource":${resource},"scopeSpans":[{"scope":${scope},"spans":[`),
    tail: Buffer.from(']}]}]}'),
  };
}
