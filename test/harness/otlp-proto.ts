// Decodes what the OTLP exporter sends (OTLP/HTTP binary protobuf) with protobufjs, an encoder
// independent of Tollgate's, into the shape of OTLP/HTTP JSON (camelCase names, ids as lowercase
// hex, 64-bit integers as decimal strings), so tests read spans as the OTLP docs show them.
// The messages below are opentelemetry-proto's (collector/trace/v1, trace/v1, common/v1,
// resource/v1), cut to the fields Tollgate writes or might: a field Tollgate wrote under a wrong
// number or type would not decode into the field the tests read.
import protobuf from 'protobufjs';

const PROTO = `
syntax = "proto3";
package otlp;
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; string schema_url = 3; }
message Resource { repeated KeyValue attributes = 1; uint32 dropped_attributes_count = 2; }
message ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; string schema_url = 3; }
message InstrumentationScope { string name = 1; string version = 2; repeated KeyValue attributes = 3; uint32 dropped_attributes_count = 4; }
message Span {
  bytes trace_id = 1;
  bytes span_id = 2;
  string trace_state = 3;
  bytes parent_span_id = 4;
  fixed32 flags = 16;
  string name = 5;
  int32 kind = 6;
  fixed64 start_time_unix_nano = 7;
  fixed64 end_time_unix_nano = 8;
  repeated KeyValue attributes = 9;
  uint32 dropped_attributes_count = 10;
  uint32 dropped_events_count = 12;
  uint32 dropped_links_count = 14;
  Status status = 15;
}
message Status { string message = 2; int32 code = 3; }
message KeyValue { string key = 1; AnyValue value = 2; }
message AnyValue {
  oneof value {
    string string_value = 1;
    bool bool_value = 2;
    int64 int_value = 3;
    double double_value = 4;
    ArrayValue array_value = 5;
    KeyValueList kvlist_value = 6;
    bytes bytes_value = 7;
  }
}
message ArrayValue { repeated AnyValue values = 1; }
message KeyValueList { repeated KeyValue values = 1; }
`;

const root = protobuf.parse(PROTO).root;
const ExportTraceServiceRequest = root.lookupType('otlp.ExportTraceServiceRequest');
const Span = root.lookupType('otlp.Span');

const OPTIONS: protobuf.IConversionOptions = { longs: String, bytes: String, defaults: false, arrays: true };

/** A span as OTLP/HTTP JSON writes it. */
export interface OtlpSpan {
  traceId: string;
  spanId: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: Array<{ key: string; value: Record<string, unknown> }>;
  /** The code is 0 (unset) when the message leaves it out, as proto3 does. */
  status: { code: number; message?: string };
}

const hex = (base64: string | undefined): string => Buffer.from(base64 ?? '', 'base64').toString('hex');

function jsonSpan(o: Record<string, any>): OtlpSpan {
  const { traceId, spanId, status, ...rest } = o;
  return {
    ...rest,
    traceId: hex(traceId),
    spanId: hex(spanId),
    status: status === undefined ? status : { code: status.code ?? 0, ...(status.message === undefined ? {} : { message: status.message }) },
  } as OtlpSpan;
}

/** One Span message (the exporter's per-event encoding) in the JSON shape. */
export function decodeSpan(bytes: Uint8Array): OtlpSpan {
  return jsonSpan(Span.toObject(Span.decode(bytes), OPTIONS));
}

/** An export body (ExportTraceServiceRequest) in the JSON shape. */
export function decodeExportRequest(bytes: Uint8Array): any {
  const o = ExportTraceServiceRequest.toObject(ExportTraceServiceRequest.decode(bytes), OPTIONS) as any;
  for (const rs of o.resourceSpans ?? []) {
    for (const ss of rs.scopeSpans ?? []) ss.spans = (ss.spans ?? []).map(jsonSpan);
  }
  return o;
}
