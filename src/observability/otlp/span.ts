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

/** Fields carried by a semantic-convention attribute instead of a tollgate.* one. */
const MAPPED = ['type', 'operation', 'requested_model', 'upstream_model', 'provider', 'status', 'status_code', 'error_class', 'request_headers', 'occurred_at'];

/**
 * `{"key":"tollgate.<field>","value":` per event field, made once per field name; null for a
 * field exported under a semantic-convention name (or not at all). One lookup per field.
 */
const fieldPrefixes = new Map<string, string | null>(MAPPED.map((f) => [f, null]));
function fieldPrefix(field: string): string | null {
  let p = fieldPrefixes.get(field);
  if (p === undefined) {
    p = `{"key":${JSON.stringify(`tollgate.${field}`)},"value":`;
    fieldPrefixes.set(field, p);
  }
  return p;
}

/** `{"key":<key>,"value":` per fixed attribute key JSON (a fixed set: made once each). */
const keyPrefixes = new Map<string, string>();
function keyPrefix(keyJson: string): string {
  let p = keyPrefixes.get(keyJson);
  if (p === undefined) {
    p = `{"key":${keyJson},"value":`;
    keyPrefixes.set(keyJson, p);
  }
  return p;
}

/**
 * One attribute as OTLP JSON text, `prefix` being `{"key":<key>,"value":`; '' for a value that
 * carries nothing: null, undefined, a non-finite number, an empty list, or an object whose
 * members are all empty lists or zero (gateway_embedding_calls without calls).
 */
function attribute(prefix: string, v: unknown): string {
  switch (typeof v) {
    case 'string':
      return `${prefix}{"stringValue":${JSON.stringify(v)}}}`;
    case 'boolean':
      return v ? `${prefix}{"boolValue":true}}` : `${prefix}{"boolValue":false}}`;
    case 'number':
      if (!Number.isFinite(v)) return '';
      return Number.isInteger(v) ? `${prefix}{"intValue":"${v}"}}` : `${prefix}{"doubleValue":${v}}}`;
    case 'object':
      // Lists and maps (guardrail hits, embedding calls) travel as their JSON text.
      return v === null || isEmpty(v) ? '' : `${prefix}{"stringValue":${JSON.stringify(JSON.stringify(v))}}}`;
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

/**
 * The span of one usage event as OTLP/HTTP JSON text, written directly (no span object per event:
 * this runs for every exported event). `content` (already trimmed to the exporter's cap) adds the
 * content attributes.
 */
export function usageEventSpanJson(e: UsageEvent, content?: CapturedContent): string {
  const parts: string[] = [];
  const put = (keyJson: string, v: unknown): void => {
    const a = attribute(keyPrefix(keyJson), v);
    if (a !== '') parts.push(a);
  };
  const genaiOperation = GENAI_OPERATION[e.operation] ?? e.operation;
  put('"gen_ai.operation.name"', genaiOperation);
  if (e.provider !== null) {
    put('"gen_ai.provider.name"', e.provider);
    put('"gen_ai.system"', e.provider);
  }
  if (e.requested_model !== '') put('"gen_ai.request.model"', e.requested_model);
  if (e.upstream_model !== undefined && e.upstream_model !== null) put('"gen_ai.response.model"', e.upstream_model);
  if (e.prompt_tokens !== null) put('"gen_ai.usage.input_tokens"', e.prompt_tokens);
  if (e.completion_tokens !== null) put('"gen_ai.usage.output_tokens"', e.completion_tokens);
  put('"http.response.status_code"', e.status);
  if (e.error_class !== null) put('"error.type"', e.error_class);
  put('"tollgate.operation"', e.operation);
  for (const k in e) {
    const prefix = fieldPrefix(k);
    if (prefix === null) continue;
    const a = attribute(prefix, e[k as keyof UsageEvent]);
    if (a !== '') parts.push(a);
  }
  if (e.request_headers !== undefined) {
    for (const name in e.request_headers) {
      parts.push(`{"key":${JSON.stringify(`http.request.header.${name}`)},"value":{"arrayValue":{"values":[{"stringValue":${JSON.stringify(e.request_headers[name])}}]}}}`);
    }
  }
  if (content !== undefined) {
    put('"tollgate.content.request"', content.request);
    put('"tollgate.content.response"', content.response);
    put('"tollgate.content.truncated"', content.truncated);
  }
  // Nanoseconds as decimal strings without BigInt: whole microseconds fit a double exactly.
  const endUs = Date.parse(e.occurred_at) * 1000;
  const startUs = endUs - Math.round(Math.max(0, e.latency_ms) * 1000);
  const name = e.requested_model === '' ? genaiOperation : `${genaiOperation} ${e.requested_model}`;
  const status = e.status >= 400 ? `{"code":2,"message":${JSON.stringify(e.error_message ?? `status ${e.status}`)}}` : '{"code":0}';
  return `{"traceId":"${traceIdFor(e.request_id)}","spanId":"${spanId()}","name":${JSON.stringify(name)},"kind":2,"startTimeUnixNano":"${startUs}000","endTimeUnixNano":"${endUs}000","attributes":[${parts.join(',')}],"status":${status}}`;
}

/** An ExportTraceServiceRequest holding `spans` (each the JSON text of one span), as JSON text. */
export function exportRequestJson(spans: readonly string[], serviceName: string, version: string): string {
  const resource = `{"attributes":[{"key":"service.name","value":{"stringValue":${JSON.stringify(serviceName)}}}]}`;
  const scope = `{"name":"tollgate.usage","version":${JSON.stringify(version)}}`;
  return `{"resourceSpans":[{"resource":${resource},"scopeSpans":[{"scope":${scope},"spans":[${spans.join(',')}]}]}]}`;
}
