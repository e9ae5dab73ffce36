// Observability exporter: where usage events and traces leave the process. The `kind` field
// picks one closed branch. Secrets are never inline: `credential_ref` names credentials the
// exporter reads from the environment.

import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Closed, NonEmptyString, StringEnum } from './common.ts';
import type { Report } from './issues.ts';

export const EXPORTER_KINDS = ['otlp_http', 'aliyun_sls', 'object_store', 'datadog'] as const;
export type ExporterKind = (typeof EXPORTER_KINDS)[number];

export const MAX_CONTENT_BYTES = 1048576;

const common = {
  name: NonEmptyString({ maxLength: 120, description: 'identity' }),
  enabled: Type.Optional(Type.Boolean({ default: true })),
};

const content = {
  content_mode: Type.Optional(StringEnum(['metadata_only', 'full'], { default: 'metadata_only', description: 'full also exports prompt and completion text' })),
  content_max_bytes: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_CONTENT_BYTES, default: 131072 })),
};

export const OtlpHttpExporterSchema = Closed({
  ...common,
  kind: Type.Literal('otlp_http'),
  endpoint: Type.String({ pattern: '^https?://', description: 'OTLP/HTTP traces URL; https, or http for localhost' }),
  headers: Type.Optional(Type.Record(Type.String(), Type.String(), { description: 'headers sent with each export (use ${VAR} for tokens)' })),
  sample_rate: Type.Optional(Type.Number({ minimum: 0, maximum: 1, default: 1 })),
  ...content,
}, { title: 'otlp_http exporter' });

export const AliyunSlsExporterSchema = Closed({
  ...common,
  kind: Type.Literal('aliyun_sls'),
  endpoint: NonEmptyString(),
  project: NonEmptyString(),
  logstore: NonEmptyString(),
  credential_ref: NonEmptyString(),
  ...content,
}, { title: 'aliyun_sls exporter' });

export const ObjectStoreExporterSchema = Closed({
  ...common,
  kind: Type.Literal('object_store'),
  provider: StringEnum(['s3', 'gcs', 'azure_blob']),
  bucket: NonEmptyString(),
  prefix: Type.Optional(Type.String()),
  region: Type.Optional(NonEmptyString()),
  endpoint: Type.Optional(Type.String({ pattern: '^https?://' })),
  auth_mode: Type.Optional(StringEnum(['credential_ref', 'cloud_identity'], { default: 'credential_ref' })),
  credential_ref: Type.Optional(NonEmptyString()),
  compression: Type.Optional(StringEnum(['gzip', 'none'], { default: 'gzip' })),
}, { title: 'object_store exporter' });

export const DatadogExporterSchema = Closed({
  ...common,
  kind: Type.Literal('datadog'),
  site: NonEmptyString({ description: 'e.g. datadoghq.com' }),
  service: NonEmptyString(),
  credential_ref: NonEmptyString(),
  ddsource: Type.Optional(NonEmptyString({ default: 'tollgate-ai-gateway' })),
  tags: Type.Optional(Type.Array(NonEmptyString(), { default: [] })),
  ...content,
}, { title: 'datadog exporter' });

export const EXPORTER_BRANCHES: Record<ExporterKind, TSchema> = {
  otlp_http: OtlpHttpExporterSchema,
  aliyun_sls: AliyunSlsExporterSchema,
  object_store: ObjectStoreExporterSchema,
  datadog: DatadogExporterSchema,
};

export const ObservabilityExporterSchema = Type.Union(
  [OtlpHttpExporterSchema, AliyunSlsExporterSchema, ObjectStoreExporterSchema, DatadogExporterSchema],
  { title: 'observability_exporter', description: 'A usage/trace exporter; `kind` selects the branch' },
);

export type ObservabilityExporterDoc = Static<typeof ObservabilityExporterSchema>;

/** An HTTP header name (RFC 9110 token) and a value an HTTP client sends as it is. */
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** Hosts an otlp_http exporter may reach over plain http (local collectors and tests). */
const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Checks JSON Schema cannot express. */
export function checkObservabilityExporter(doc: ObservabilityExporterDoc, report: Report): void {
  if (doc.kind === 'otlp_http') {
    let url: URL | undefined;
    try {
      url = new URL(doc.endpoint);
    } catch {
      report(['endpoint'], 'must be an absolute URL');
    }
    if (url && url.protocol === 'http:' && !LOCAL_HOSTS.has(url.hostname)) {
      report(['endpoint'], 'must use https (plain http only for localhost, 127.0.0.1 or [::1])');
    }
    // Refused now rather than failing every export; the message never quotes a value (a token).
    for (const [name, value] of Object.entries(doc.headers ?? {})) {
      if (!HEADER_NAME.test(name)) report(['headers', name], 'is not a valid header name');
      else if (!HEADER_VALUE.test(value)) report(['headers', name], 'must not contain control characters (a line break included) or characters above U+00FF');
    }
  } else if (doc.kind === 'object_store') {
    const mode = doc.auth_mode ?? 'credential_ref';
    if (mode === 'credential_ref' && doc.credential_ref === undefined) report(['credential_ref'], 'required when auth_mode is credential_ref');
    if (mode === 'cloud_identity' && doc.credential_ref !== undefined) report(['credential_ref'], 'not allowed when auth_mode is cloud_identity');
  }
}
