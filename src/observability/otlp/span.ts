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
// left behind. The attribution attributes (who called what, how it ended) are one run of bytes
// made once per attribution and kept (attributionMemo); a span writes the rest (ids,
// times, token counts, latencies) itself (`npm run bench:serialisers`).
import { createHash, randomBytes } from 'node:crypto';
import { isoTimeMs } from '../../lib/iso-time.ts';
import { JsonBytes, jsonText } from '../../lib/json-bytes.ts';
import { attributionMemo } from '../attribution-memo.ts';
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
 * a span (the request id, always there) is written without it (FIRST_REQUEST_ID).
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
const START = jsonText('","startTimeUnixNano":"');
const END = jsonText('000","endTimeUnixNano":"');
const ATTRIBUTES = jsonText('000","attributes":[');
const FIRST_REQUEST_ID = T.request_id.str.subarray(1);
const NAME = jsonText('],"name":');
const STATUS_OK = jsonText(',"kind":2,"status":{"code":0}}');
const STATUS_ERROR = jsonText(',"kind":2,"status":{"code":2,"message":');

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

/** JsonBytes with the attribute kinds of a span. */
class SpanWriter extends JsonBytes {
  /** A string attribute; nothing for null or undefined. */
  strAttr(k: AttributeKey, v: string | null | undefined): void {
    if (v === null || v === undefined) return;
    this.raw(k.str);
    this.str(v);
    this.raw(CLOSE);
  }

  /** A number attribute (intValue for integers); nothing for null, undefined or a non-finite number. */
  numAttr(k: AttributeKey, v: number | null | undefined): void {
    if (v === null || v === undefined || !Number.isFinite(v)) return;
    if (Number.isInteger(v)) {
      this.raw(k.int);
      this.num(v);
      this.raw(QUOTE_CLOSE);
    } else {
      this.raw(k.dbl);
      this.num(v);
      this.raw(CLOSE);
    }
  }

  boolAttr(k: AttributeKey, v: boolean | undefined): void {
    if (v !== undefined) this.raw(v ? k.yes : k.no);
  }

  /**
   * A list or map (guardrail hits, embedding calls) as its JSON text; nothing when it is empty, or
   * an object whose members are all empty lists or zero (gateway_embedding_calls without calls).
   */
  objectAttr(k: AttributeKey, v: object | undefined): void {
    if (v === undefined || isEmpty(v)) return;
    this.raw(k.str);
    this.str(JSON.stringify(v));
    this.raw(CLOSE);
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

/** Where spans are written; its buffer grows (and stays grown) for large content. */
const spans = new SpanWriter(16 * 1024);
/** Where a span's attribution text is made. */
const attributionWriter = new SpanWriter(4096);

/**
 * The span of one usage event as OTLP/HTTP JSON, UTF-8 encoded. The bytes are a view of a buffer
 * that the next call overwrites: copy them before encoding another span. `content` (already
 * trimmed to the exporter's cap) adds the content attributes. Fields are read one by one (not
 * through the EXPORTED_FIELDS keys): a keyed read per field costs more than the field's text.
 *
 * The attributes that change with every event come first; the attribution attributes, the span's
 * name and its status close the span as one run of bytes, made once per attribution and kept
 * (attributionMemo).
 */
export function encodeUsageEventSpan(e: UsageEvent, content?: CapturedContent): Buffer {
  const w = spans;
  w.reset();
  // Nanoseconds as decimal strings without BigInt: whole microseconds fit a double exactly.
  const endUs = isoTimeMs(e.occurred_at) * 1000;
  const startUs = endUs - Math.round(Math.max(0, e.latency_ms) * 1000);
  w.raw(TRACE_ID);
  if (!w.uuidHex(e.request_id)) w.ascii(traceIdFor(e.request_id));
  w.raw(SPAN_ID);
  w.ascii(spanId());
  w.raw(START);
  w.num(startUs);
  w.raw(END);
  w.num(endUs);
  w.raw(ATTRIBUTES);
  w.raw(FIRST_REQUEST_ID);
  w.str(e.request_id);
  w.raw(CLOSE);
  w.numAttr(A_INPUT_TOKENS, e.prompt_tokens);
  w.numAttr(A_OUTPUT_TOKENS, e.completion_tokens);
  w.numAttr(T.prompt_tokens, e.prompt_tokens);
  w.numAttr(T.completion_tokens, e.completion_tokens);
  w.numAttr(T.total_tokens, e.total_tokens);
  w.numAttr(T.cached_tokens, e.cached_tokens);
  w.numAttr(T.cache_creation_tokens, e.cache_creation_tokens);
  w.numAttr(T.reasoning_tokens, e.reasoning_tokens);
  w.numAttr(T.latency_ms, e.latency_ms);
  w.numAttr(T.ttft_ms, e.ttft_ms);
  w.numAttr(T.downstream_latency_ms, e.downstream_latency_ms);
  w.numAttr(T.downstream_ttft_ms, e.downstream_ttft_ms);
  w.numAttr(T.upstream_latency_ms, e.upstream_latency_ms);
  w.numAttr(T.upstream_ttft_ms, e.upstream_ttft_ms);
  if (content !== undefined) {
    w.strAttr(A_CONTENT_REQUEST, content.request);
    w.strAttr(A_CONTENT_RESPONSE, content.response);
    w.boolAttr(A_CONTENT_TRUNCATED, content.truncated);
  }
  w.raw(attribution.get(e));
  return w.view();
}

/**
 * The attribution attributes of a span, then the end of its attribute list, its name, kind and
 * status: `,{attribute}...],"name":...,"kind":2,"status":{...}}`.
 */
const attribution = attributionMemo<Uint8Array>((e) => {
  const genaiOperation = GENAI_OPERATION[e.operation] ?? e.operation;
  const w = attributionWriter;
  w.reset();
  w.strAttr(A_OPERATION, genaiOperation);
  if (e.provider !== null) {
    w.strAttr(A_PROVIDER, e.provider);
    w.strAttr(A_SYSTEM, e.provider);
  }
  if (e.requested_model !== '') w.strAttr(A_REQUEST_MODEL, e.requested_model);
  w.strAttr(A_RESPONSE_MODEL, e.upstream_model);
  w.numAttr(A_STATUS, e.status);
  w.strAttr(A_ERROR_TYPE, e.error_class);
  w.strAttr(A_TOLLGATE_OPERATION, e.operation);
  w.strAttr(T.model_id, e.model_id);
  w.strAttr(T.provider_key_id, e.provider_key_id);
  w.strAttr(T.api_key_id, e.api_key_id);
  w.strAttr(T.error_message, e.error_message);
  w.strAttr(T.attempt_kind, e.attempt_kind);
  w.boolAttr(T.billable, e.billable);
  w.boolAttr(T.stream, e.stream);
  w.strAttr(T.passthrough_route_name, e.passthrough_route_name);
  w.strAttr(T.client_identity, e.client_identity);
  w.objectAttr(T.applied_guardrails, e.applied_guardrails);
  w.boolAttr(T.guardrail_blocked, e.guardrail_blocked);
  w.boolAttr(T.guardrail_blocked_fail_closed, e.guardrail_blocked_fail_closed);
  w.strAttr(T.guardrail_bypassed_reason, e.guardrail_bypassed_reason);
  w.objectAttr(T.guardrail_enforced_hits, e.guardrail_enforced_hits);
  w.objectAttr(T.guardrail_monitor_hits, e.guardrail_monitor_hits);
  w.objectAttr(T.gateway_embedding_calls, e.gateway_embedding_calls);
  const headers = e.request_headers;
  if (headers !== undefined) {
    for (const name in headers) {
      w.raw(headerKey(name).header);
      w.str(headers[name]);
      w.raw(HEADER_CLOSE);
    }
  }
  w.raw(NAME);
  w.str(e.requested_model === '' ? genaiOperation : genaiOperation + ' ' + e.requested_model);
  if (e.status >= 400) {
    w.raw(STATUS_ERROR);
    w.str(e.error_message ?? `status ${e.status}`);
    w.raw(CLOSE);
  } else {
    w.raw(STATUS_OK);
  }
  return new Uint8Array(w.view());
});

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
