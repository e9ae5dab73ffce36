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

/** The trace of a request: its UUID request id as 32 hex digits, or a digest of any other id. */
export function traceIdFor(requestId: string): string {
  if (UUID.test(requestId)) return requestId.replaceAll('-', '').toLowerCase();
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
const MAPPED = new Set(['type', 'operation', 'requested_model', 'upstream_model', 'provider', 'status', 'status_code', 'error_class', 'request_headers', 'occurred_at']);

function value(v: unknown): OtlpAnyValue | undefined {
  switch (typeof v) {
    case 'string':
      return { stringValue: v };
    case 'boolean':
      return { boolValue: v };
    case 'number':
      return Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v };
    case 'object':
      // Arrays and maps (guardrail hits, embedding calls) travel as their JSON text.
      return v === null ? undefined : { stringValue: JSON.stringify(v) };
    default:
      return undefined;
  }
}

function nanos(ms: number): bigint {
  return BigInt(Math.round(ms * 1000)) * 1000n;
}

/** The span of one usage event; `content` (already trimmed to the exporter's cap) adds the content attributes. */
export function usageEventToSpan(e: UsageEvent, content?: CapturedContent): OtlpSpan {
  const attributes: OtlpAttribute[] = [];
  const put = (key: string, v: unknown): void => {
    const encoded = value(v);
    if (encoded !== undefined) attributes.push({ key, value: encoded });
  };
  const genaiOperation = GENAI_OPERATION[e.operation] ?? e.operation;
  put('gen_ai.operation.name', genaiOperation);
  if (e.provider !== null) {
    put('gen_ai.provider.name', e.provider);
    put('gen_ai.system', e.provider);
  }
  if (e.requested_model !== '') put('gen_ai.request.model', e.requested_model);
  if (e.upstream_model !== undefined && e.upstream_model !== null) put('gen_ai.response.model', e.upstream_model);
  if (e.prompt_tokens !== null) put('gen_ai.usage.input_tokens', e.prompt_tokens);
  if (e.completion_tokens !== null) put('gen_ai.usage.output_tokens', e.completion_tokens);
  put('http.response.status_code', e.status);
  if (e.error_class !== null) put('error.type', e.error_class);
  put('tollgate.operation', e.operation);
  for (const [k, v] of Object.entries(e)) {
    if (!MAPPED.has(k)) put(`tollgate.${k}`, v);
  }
  if (e.request_headers !== undefined) {
    for (const [name, v] of Object.entries(e.request_headers)) {
      attributes.push({ key: `http.request.header.${name}`, value: { arrayValue: { values: [{ stringValue: v }] } } });
    }
  }
  if (content !== undefined) {
    attributes.push(
      { key: 'tollgate.content.request', value: { stringValue: content.request } },
      { key: 'tollgate.content.response', value: { stringValue: content.response } },
      { key: 'tollgate.content.truncated', value: { boolValue: content.truncated } },
    );
  }
  const endMs = Date.parse(e.occurred_at);
  const end = nanos(endMs);
  const start = end - nanos(Math.max(0, e.latency_ms));
  return {
    traceId: traceIdFor(e.request_id),
    spanId: randomBytes(8).toString('hex'),
    name: e.requested_model === '' ? genaiOperation : `${genaiOperation} ${e.requested_model}`,
    kind: 2,
    startTimeUnixNano: String(start),
    endTimeUnixNano: String(end),
    attributes,
    status: e.status >= 400 ? { code: 2, message: e.error_message ?? `status ${e.status}` } : { code: 0 },
  };
}

/** An ExportTraceServiceRequest holding `spans`. */
export function exportRequest(spans: OtlpSpan[], serviceName: string, version: string): unknown {
  return {
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: serviceName } }] },
        scopeSpans: [{ scope: { name: 'tollgate.usage', version }, spans }],
      },
    ],
  };
}
