// Usage events as OTLP spans (OTLP/HTTP JSON encoding): one span per event, its end time the
// event's occurred_at, its start that minus the request's latency. GenAI semantic-convention
// attributes where they fit (gen_ai.*, http.*, error.type), every other event field as
// `tollgate.<field>`, and captured request headers as `http.request.header.<name>`. Content
// (full-mode exporters only) as `tollgate.content.request`, `tollgate.content.response` and
// `tollgate.content.truncated`.
//
// A span is written as UTF-8 bytes straight into one reused buffer: the fixed parts are encoded
// once, strings are copied character by character when JSON needs no escape for them (ids, names,
// models: the common case), and nothing else is left behind. Built as a string, a span was some
// 200 concatenated pieces, flattened and then encoded: ~7 KB of garbage per event, which cost the
// gateway more than the encoding itself.
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

/** `{"key":<key>,"value":` as UTF-8 bytes. */
function prefix(key: string): Buffer {
  return Buffer.from(`{"key":${JSON.stringify(key)},"value":`);
}

/** The exported fields, and the attribute prefix of each (made once). */
const FIELDS: readonly (keyof UsageEvent)[] = (Object.keys(EXPORTED_FIELDS) as (keyof UsageEvent)[]).filter((f) => EXPORTED_FIELDS[f]);
const FIELD_PREFIXES: readonly Buffer[] = FIELDS.map((f) => prefix(`tollgate.${f}`));

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

const text = (t: string): Buffer => Buffer.from(t);
const STRING_VALUE = text('{"stringValue":');
const INT_VALUE = text('{"intValue":"');
const DOUBLE_VALUE = text('{"doubleValue":');
const BOOL_TRUE = text('{"boolValue":true}}');
const BOOL_FALSE = text('{"boolValue":false}}');
const CLOSE = text('}}');
const QUOTE_CLOSE = text('"}}');
const HEADER_VALUE = text('{"arrayValue":{"values":[{"stringValue":');
const HEADER_CLOSE = text('}]}}}');
const TRACE_ID = text('{"traceId":"');
const SPAN_ID = text('","spanId":"');
const NAME = text('","name":');
const START = text(',"kind":2,"startTimeUnixNano":"');
const END = text('000","endTimeUnixNano":"');
const ATTRIBUTES = text('000","attributes":[');
const STATUS = text('],"status":');
const STATUS_OK = text('{"code":0}');
const STATUS_ERROR = text('{"code":2,"message":');

/** Attribute prefixes of captured request headers, by header name (a configured, fixed set). */
const headerPrefixes = new Map<string, Buffer>();
function headerPrefix(name: string): Buffer {
  let p = headerPrefixes.get(name);
  if (p === undefined) {
    p = prefix(`http.request.header.${name}`);
    headerPrefixes.set(name, p);
  }
  return p;
}

/** The span being written: `out[0, at)`; `out` grows (and stays grown) for large content. */
let out = Buffer.allocUnsafe(16 * 1024);
let at = 0;
/** No attribute written yet in the current span (attributes are comma-separated). */
let firstAttribute = true;

function room(n: number): void {
  if (at + n <= out.length) return;
  const grown = Buffer.allocUnsafe(Math.max(2 * out.length, at + n));
  out.copy(grown, 0, 0, at);
  out = grown;
}

function bytes(b: Buffer): void {
  const n = b.length;
  room(n);
  out.set(b, at);
  at += n;
}

/** An ASCII string as is (digits, hex ids). */
function ascii(s: string): void {
  const n = s.length;
  room(n);
  const o = out;
  const p = at;
  for (let i = 0; i < n; i++) o[p + i] = s.charCodeAt(i);
  at = p + n;
}

/**
 * `v` as a JSON string literal: copied as is when JSON needs no escape and it is ASCII (the
 * common case), else JSON.stringify's text (escapes, non-ASCII, lone surrogates).
 */
function str(v: string): void {
  const n = v.length;
  room(n + 2);
  const o = out;
  const p = at + 1;
  o[at] = 0x22;
  for (let i = 0; i < n; i++) {
    const c = v.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c || c >= 0x7f) {
      const quoted = JSON.stringify(v);
      room(quoted.length * 3);
      at += out.write(quoted, at, 'utf8');
      return;
    }
    o[p + i] = c;
  }
  o[p + n] = 0x22;
  at = p + n + 1;
}

function comma(): void {
  if (firstAttribute) {
    firstAttribute = false;
    return;
  }
  room(1);
  out[at++] = 0x2c;
}

/**
 * One attribute, `prefix` being `{"key":<key>,"value":`; nothing for a value that carries
 * nothing: null, undefined, a non-finite number, an empty list, or an object whose members are
 * all empty lists or zero (gateway_embedding_calls without calls).
 */
function attribute(prefix: Buffer, v: unknown): void {
  switch (typeof v) {
    case 'string':
      comma();
      bytes(prefix);
      bytes(STRING_VALUE);
      str(v);
      bytes(CLOSE);
      return;
    case 'boolean':
      comma();
      bytes(prefix);
      bytes(v ? BOOL_TRUE : BOOL_FALSE);
      return;
    case 'number':
      if (!Number.isFinite(v)) return;
      comma();
      bytes(prefix);
      if (Number.isInteger(v)) {
        bytes(INT_VALUE);
        ascii(String(v));
        bytes(QUOTE_CLOSE);
      } else {
        bytes(DOUBLE_VALUE);
        ascii(String(v));
        bytes(CLOSE);
      }
      return;
    case 'object':
      // Lists and maps (guardrail hits, embedding calls) travel as their JSON text.
      if (v === null || isEmpty(v)) return;
      comma();
      bytes(prefix);
      bytes(STRING_VALUE);
      str(JSON.stringify(v));
      bytes(CLOSE);
      return;
    default:
      return;
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
 * The span of one usage event as OTLP/HTTP JSON, UTF-8 encoded. The bytes are a view of a buffer
 * that the next call overwrites: copy them before encoding another span. `content` (already
 * trimmed to the exporter's cap) adds the content attributes.
 */
export function encodeUsageEventSpan(e: UsageEvent, content?: CapturedContent): Buffer {
  at = 0;
  firstAttribute = true;
  const genaiOperation = GENAI_OPERATION[e.operation] ?? e.operation;
  // Nanoseconds as decimal strings without BigInt: whole microseconds fit a double exactly.
  const endUs = parseTime(e.occurred_at) * 1000;
  const startUs = endUs - Math.round(Math.max(0, e.latency_ms) * 1000);
  bytes(TRACE_ID);
  ascii(traceIdFor(e.request_id));
  bytes(SPAN_ID);
  ascii(spanId());
  bytes(NAME);
  str(e.requested_model === '' ? genaiOperation : genaiOperation + ' ' + e.requested_model);
  bytes(START);
  ascii(String(startUs));
  bytes(END);
  ascii(String(endUs));
  bytes(ATTRIBUTES);
  attribute(P_OPERATION, genaiOperation);
  if (e.provider !== null) {
    attribute(P_PROVIDER, e.provider);
    attribute(P_SYSTEM, e.provider);
  }
  if (e.requested_model !== '') attribute(P_REQUEST_MODEL, e.requested_model);
  if (e.upstream_model !== undefined && e.upstream_model !== null) attribute(P_RESPONSE_MODEL, e.upstream_model);
  if (e.prompt_tokens !== null) attribute(P_INPUT_TOKENS, e.prompt_tokens);
  if (e.completion_tokens !== null) attribute(P_OUTPUT_TOKENS, e.completion_tokens);
  attribute(P_STATUS, e.status);
  if (e.error_class !== null) attribute(P_ERROR_TYPE, e.error_class);
  attribute(P_TOLLGATE_OPERATION, e.operation);
  for (let i = 0; i < FIELDS.length; i++) attribute(FIELD_PREFIXES[i], e[FIELDS[i]]);
  const headers = e.request_headers;
  if (headers !== undefined) {
    for (const name in headers) {
      comma();
      bytes(headerPrefix(name));
      bytes(HEADER_VALUE);
      str(headers[name]);
      bytes(HEADER_CLOSE);
    }
  }
  if (content !== undefined) {
    attribute(P_CONTENT_REQUEST, content.request);
    attribute(P_CONTENT_RESPONSE, content.response);
    attribute(P_CONTENT_TRUNCATED, content.truncated);
  }
  bytes(STATUS);
  if (e.status >= 400) {
    bytes(STATUS_ERROR);
    str(e.error_message ?? `status ${e.status}`);
    room(1);
    out[at++] = 0x7d; // }
  } else {
    bytes(STATUS_OK);
  }
  room(1);
  out[at++] = 0x7d; // }
  return out.subarray(0, at);
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
