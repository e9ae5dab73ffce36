// Usage events as OTLP spans, in OTLP/HTTP's binary protobuf encoding (the encoding every OTLP
// receiver takes; JSON is optional for receivers, and some take only protobuf): one span per
// event, its end time the event's occurred_at, its start that minus the request's latency. GenAI
// semantic-convention attributes where they fit (gen_ai.*, http.*, error.type), every other event
// field as `tollgate.<field>`, and captured request headers as `http.request.header.<name>`.
// Content (full-mode exporters only) as `tollgate.content.request`, `tollgate.content.response`
// and `tollgate.content.truncated`.
//
// A span is written straight into one reused buffer (ProtoBytes): each attribute's key is one
// constant made once, numbers are varints and little-endian words, and nothing else is left
// behind. The attribution attributes (who called what, how it ended), the span's name, kind and
// status are one run of bytes made once per attribution and kept (attributionMemo); a span writes
// the rest (ids, times, token counts, latencies) itself (`npm run bench:serialisers`).
//
// Messages and field numbers: opentelemetry-proto, collector/trace/v1 (ExportTraceServiceRequest),
// trace/v1 (ResourceSpans, ScopeSpans, Span, Status), common/v1 (KeyValue, AnyValue, ArrayValue,
// InstrumentationScope), resource/v1 (Resource).
import { createHash, randomBytes } from 'node:crypto';
import { isoTimeMs } from '../../lib/iso-time.ts';
import { fieldKey, I64, LEN, ProtoBytes, protoConst, protoField, VARINT, varintLength } from '../../lib/proto-bytes.ts';
import { attributionMemo } from '../attribution-memo.ts';
import type { CapturedContent } from '../content-text.ts';
import type { UsageEvent } from '../usage-events.ts';

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
  prompt_tokens: false,
  completion_tokens: false,
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

// Field keys. Span: trace_id 1, span_id 2, name 5, kind 6, start_time_unix_nano 7 (fixed64),
// end_time_unix_nano 8 (fixed64), attributes 9, status 15. Status: message 2, code 3. KeyValue: key
// 1, value 2. AnyValue: string_value 1, bool_value 2, int_value 3, double_value 4, array_value 5.
// ArrayValue: values 1.
const SPAN_TRACE_ID = protoConst(fieldKey(1, LEN), 16);
const SPAN_SPAN_ID = protoConst(fieldKey(2, LEN), 8);
const SPAN_NAME = fieldKey(5, LEN);
/** kind = 2 (SPAN_KIND_SERVER: the gateway answering a caller). */
const SPAN_KIND_SERVER = protoConst(fieldKey(6, VARINT), 2);
const SPAN_START = fieldKey(7, I64);
const SPAN_END = fieldKey(8, I64);
const SPAN_ATTRIBUTE = fieldKey(9, LEN);
const SPAN_STATUS = fieldKey(15, LEN);
/** An unset status code (0): an empty Status. */
const STATUS_UNSET = protoConst(SPAN_STATUS, 0);
const STATUS_MESSAGE = fieldKey(2, LEN);
/** code = 2 (STATUS_CODE_ERROR). */
const STATUS_CODE_ERROR = protoConst(fieldKey(3, VARINT), 2);
const KV_VALUE = fieldKey(2, LEN);
const ANY_STRING = fieldKey(1, LEN);
const ANY_BOOL = fieldKey(2, VARINT);
const ANY_INT = fieldKey(3, VARINT);
const ANY_DOUBLE = fieldKey(4, I64);
const ANY_ARRAY = fieldKey(5, LEN);
const ARRAY_VALUES = fieldKey(1, LEN);

/**
 * One attribute's key, made once: the KeyValue's key field, the openings of its values up to their
 * payload, and the whole attribute for the two boolean values.
 */
interface AttributeKey {
  key: Uint8Array;
  /**
   * A short string value's opening: attribute key, KeyValue length, the key, value key, AnyValue
   * length, string key, string length; the three lengths (at 1, len-3 and len-1) are set per value.
   */
  shortStr: Uint8Array;
  /** An int_value's opening, by the varint's length in bytes (1 to 10). */
  int: Uint8Array[];
  /** A double_value's opening. */
  dbl: Uint8Array;
  yes: Uint8Array;
  no: Uint8Array;
}

/** The keys of a fixed attribute name (the openings' lengths are one-byte varints: names up to ~100 bytes). */
function attributeKey(name: string): AttributeKey {
  const key = protoField(1, name);
  const bool = (v: 0 | 1): Uint8Array => protoConst(SPAN_ATTRIBUTE, key.length + 4, key, KV_VALUE, 2, ANY_BOOL, v);
  const int: Uint8Array[] = [new Uint8Array(0)];
  for (let n = 1; n <= 10; n++) int.push(protoConst(SPAN_ATTRIBUTE, key.length + 3 + n, key, KV_VALUE, 1 + n, ANY_INT));
  return {
    key,
    shortStr: protoConst(SPAN_ATTRIBUTE, 0, key, KV_VALUE, 0, ANY_STRING, 0),
    int,
    dbl: protoConst(SPAN_ATTRIBUTE, key.length + 11, key, KV_VALUE, 9, ANY_DOUBLE),
    yes: bool(1),
    no: bool(0),
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

/**
 * The key fields of captured request headers' attributes, by header name (a configured, fixed
 * set). Only the key: a header's value is always a string array, whatever the name's length.
 */
const headerKeys = new Map<string, Uint8Array>();
function headerKey(name: string): Uint8Array {
  let k = headerKeys.get(name);
  if (k === undefined) {
    k = protoField(1, `http.request.header.${name}`);
    headerKeys.set(name, k);
  }
  return k;
}

/** ProtoBytes with the attribute kinds of a span. */
class SpanWriter extends ProtoBytes {
  /** A string attribute; nothing for null or undefined. */
  strAttr(k: AttributeKey, v: string | null | undefined): void {
    if (v === null || v === undefined) return;
    // Short ASCII (ids, names): every length fits one byte, so the opening is one copy and three bytes set.
    const head = k.shortStr;
    const n = v.length;
    if (head.length + n < 0x80 && this.shortAscii(head, v)) return;
    const attribute = this.open(SPAN_ATTRIBUTE);
    this.raw(k.key);
    const value = this.open(KV_VALUE);
    this.byte(ANY_STRING);
    this.str(v);
    this.close(value);
    this.close(attribute);
  }

  /**
   * A number attribute: int_value for non-negative safe integers (token counts, statuses),
   * double_value for the rest; nothing for null, undefined or a non-finite number.
   */
  numAttr(k: AttributeKey, v: number | null | undefined): void {
    if (v === null || v === undefined || !Number.isFinite(v)) return;
    if (Number.isSafeInteger(v) && v >= 0) {
      this.raw(k.int[varintLength(v)]);
      this.varint(v);
    } else {
      this.raw(k.dbl);
      this.double(v);
    }
  }

  /**
   * `head` (a shortStr opening) with its three lengths set, then `v`'s characters; false, with
   * nothing written, at the first character that is not ASCII.
   */
  private shortAscii(head: Uint8Array, v: string): boolean {
    const n = v.length;
    const h = head.length;
    this.room(h + n);
    const o = this.buf;
    const p = this.at + h;
    for (let i = 0; i < n; i++) {
      const c = v.charCodeAt(i);
      if (c >= 0x80) return false;
      o[p + i] = c;
    }
    o.set(head, this.at);
    o[this.at + 1] = h - 2 + n;
    o[p - 3] = 2 + n;
    o[p - 1] = n;
    this.at = p + n;
    return true;
  }

  boolAttr(k: AttributeKey, v: boolean | undefined): void {
    if (v !== undefined) this.raw(v ? k.yes : k.no);
  }

  /** A header's value: a one-string array, as OpenTelemetry's HTTP conventions have it. */
  headerAttr(key: Uint8Array, v: string): void {
    const attribute = this.open(SPAN_ATTRIBUTE);
    this.raw(key);
    const value = this.open(KV_VALUE);
    const array = this.open(ANY_ARRAY);
    const item = this.open(ARRAY_VALUES);
    this.byte(ANY_STRING);
    this.str(v);
    this.close(item);
    this.close(array);
    this.close(value);
    this.close(attribute);
  }

  /**
   * A list or map (guardrail hits, embedding calls) as its JSON text; nothing when it is empty, or
   * an object whose members are all empty lists or zero (gateway_embedding_calls without calls).
   */
  objectAttr(k: AttributeKey, v: object | undefined): void {
    if (v === undefined || isEmpty(v)) return;
    this.strAttr(k, JSON.stringify(v));
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
const ID_POOL_IDS = 512;
let idPool = randomBytes(8 * ID_POOL_IDS);
let idAt = 0;

/** Where spans are written; its buffer grows (and stays grown) for large content. */
const spans = new SpanWriter(16 * 1024);
/** Where a span's attribution bytes are made. */
const attributionWriter = new SpanWriter(4096);

/**
 * The span of one usage event, protobuf-encoded (a Span message, without the key and length that
 * place it in its ScopeSpans). The bytes are a view of a buffer that the next call overwrites:
 * copy them before encoding another span. `content` (already trimmed to the exporter's cap) adds
 * the content attributes. Fields are read one by one (not through the EXPORTED_FIELDS keys): a
 * keyed read per field costs more than the field's bytes.
 *
 * The fields that change with every event come first; the attribution attributes, the span's
 * name, kind and status close the span as one run of bytes, made once per attribution and kept
 * (attributionMemo).
 */
export function encodeUsageEventSpan(e: UsageEvent, content?: CapturedContent): Buffer {
  const w = spans;
  w.reset();
  // Whole microseconds: a double holds them exactly; the nanoseconds are made in two words.
  const endUs = isoTimeMs(e.occurred_at) * 1000;
  const startUs = Math.max(0, endUs - Math.round(Math.max(0, e.latency_ms) * 1000));
  w.raw(SPAN_TRACE_ID);
  if (!w.uuidBytes(e.request_id)) w.hex(traceIdFor(e.request_id));
  w.raw(SPAN_SPAN_ID);
  if (idAt >= idPool.length) {
    idPool = randomBytes(8 * ID_POOL_IDS);
    idAt = 0;
  }
  for (let i = 0; i < 8; i++) w.byte(idPool[idAt++]);
  w.byte(SPAN_START);
  w.nanosFromMicros(startUs);
  w.byte(SPAN_END);
  w.nanosFromMicros(endUs);
  w.strAttr(T.request_id, e.request_id);
  w.numAttr(A_INPUT_TOKENS, e.prompt_tokens);
  w.numAttr(A_OUTPUT_TOKENS, e.completion_tokens);
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

/** The attribution attributes of a span, then its name, kind and status. */
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
    for (const name in headers) w.headerAttr(headerKey(name), headers[name]);
  }
  w.byte(SPAN_NAME);
  w.str(e.requested_model === '' ? genaiOperation : genaiOperation + ' ' + e.requested_model);
  w.raw(SPAN_KIND_SERVER);
  if (e.status >= 400) {
    const status = w.open(SPAN_STATUS);
    w.byte(STATUS_MESSAGE);
    w.str(e.error_message ?? `status ${e.status}`);
    w.raw(STATUS_CODE_ERROR);
    w.close(status);
  } else {
    w.raw(STATUS_UNSET);
  }
  return new Uint8Array(w.view());
});

/** The key of a span in its ScopeSpans (`spans`, field 2): a batch writes it and the span's length before each span. */
export const SCOPE_SPANS_SPAN = fieldKey(2, LEN);

/**
 * What surrounds the spans of an ExportTraceServiceRequest (one resource, one scope):
 * `resource_spans` (1) { `resource` (1), `scope_spans` (2) { `scope` (1), the spans } }. The two
 * enclosing lengths depend on the spans, so a batch leaves room for the head and has it written
 * once its spans are all there.
 */
export class ExportFrame {
  /** The ResourceSpans' `resource` field and the ScopeSpans' `scope` field, each whole. */
  private readonly resource: Uint8Array;
  private readonly scope: Uint8Array;
  /** The most bytes the head takes (two keys, two varints of at most 5 bytes, the two fields). */
  readonly maxHeadBytes: number;

  constructor(serviceName: string, version: string) {
    // Resource { attributes (1): KeyValue }: the same bytes as a span's attribute (field 9) after the key.
    const w = new SpanWriter(256);
    w.strAttr(attributeKey('service.name'), serviceName);
    const attributes = new Uint8Array(w.view());
    attributes[0] = fieldKey(1, LEN);
    this.resource = protoField(1, attributes);
    // InstrumentationScope { name (1), version (2) }
    this.scope = protoField(1, protoConst(protoField(1, 'tollgate.usage'), protoField(2, version)));
    this.maxHeadBytes = 12 + this.resource.length + this.scope.length;
  }

  /** Writes the head so that it ends at `end` in `buf`, `spansBytes` of span fields following it; returns where it starts. */
  writeHead(buf: Buffer, end: number, spansBytes: number): number {
    const scopeSpans = this.scope.length + spansBytes;
    const resourceSpans = this.resource.length + 1 + varintLength(scopeSpans) + scopeSpans;
    const w = new ProtoBytes(this.maxHeadBytes);
    w.byte(fieldKey(1, LEN));
    w.varint(resourceSpans);
    w.raw(this.resource);
    w.byte(fieldKey(2, LEN));
    w.varint(scopeSpans);
    w.raw(this.scope);
    const head = w.view();
    head.copy(buf, end - head.length);
    return end - head.length;
  }
}
