import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertErrors, expectOk, loadObj } from './test-helpers.ts';

const load = (...observability_exporters: Record<string, unknown>[]) => loadObj({ observability_exporters });

test('otlp_http loads with defaults', () => {
  const r = loadObj({ observability_exporters: [{ name: 't', kind: 'otlp_http', endpoint: 'https://otel.example.com/v1/traces', headers: { authorization: 'Bearer ${T}' } }] }, { T: 'tok' });
  const { id: _id, ...e } = expectOk(r).observability_exporters[0];
  assert.deepEqual(e, {
    name: 't', kind: 'otlp_http', endpoint: 'https://otel.example.com/v1/traces', headers: { authorization: 'Bearer tok' },
    enabled: true, sample_rate: 1, content_mode: 'metadata_only', content_max_bytes: 131072,
  });
});

test('otlp_http rules: https except for local hosts; bounds', () => {
  expectOk(load(
    { name: 'a', kind: 'otlp_http', endpoint: 'http://localhost:4318/v1/traces' },
    { name: 'b', kind: 'otlp_http', endpoint: 'http://127.0.0.1:4318' },
    { name: 'c', kind: 'otlp_http', endpoint: 'http://[::1]:4318' },
  ));
  assertErrors(load({
    name: 'x', kind: 'otlp_http', endpoint: 'http://otel.example.com', sample_rate: 1.5, content_mode: 'all', content_max_bytes: 2000000, headers: { a: 1 },
  }, { name: 'y'.repeat(121), kind: 'otlp_http' }), [
    'observability_exporters[0] ("x").headers.a: must be a string',
    'observability_exporters[0] ("x").sample_rate: must be <= 1',
    'observability_exporters[0] ("x").content_mode: must be one of: metadata_only, full',
    'observability_exporters[0] ("x").content_max_bytes: must be <= 1048576',
    'observability_exporters[0] ("x").endpoint: must use https (plain http only for localhost, 127.0.0.1 or [::1])',
    `observability_exporters[1] ("${'y'.repeat(121)}").endpoint: required`,
    `observability_exporters[1] ("${'y'.repeat(121)}").name: must be at most 120 characters`,
  ]);
});

test('otlp_http headers must be sendable: a token name, a value without control characters (never quoted back)', () => {
  const r = loadObj({
    observability_exporters: [{
      name: 't', kind: 'otlp_http', endpoint: 'https://otel.example.com/v1/traces',
      headers: { authorization: 'Bearer ${T}', 'x tenant': 'acme', 'x-note': 'caf\u00e9 \u2026' },
    }],
  }, { T: 'tok-SECRET-123\n' });
  assertErrors(r, [
    'observability_exporters[0] ("t").headers.authorization: must not contain control characters (a line break included) or characters above U+00FF',
    'observability_exporters[0] ("t").headers["x tenant"]: is not a valid header name',
    'observability_exporters[0] ("t").headers["x-note"]: must not contain control characters (a line break included) or characters above U+00FF',
  ]);
  assert.ok(!JSON.stringify(r).includes('tok-SECRET-123'), 'the value is never in an error');
  expectOk(load({ name: 'ok', kind: 'otlp_http', endpoint: 'https://otel.example.com', headers: { 'x-note': 'caf\u00e9\tok' } }));
});

test('other kinds and their rules', () => {
  const r = expectOk(load(
    { name: 'sls', kind: 'aliyun_sls', endpoint: 'cn-hangzhou.log.aliyuncs.com', project: 'p', logstore: 'l', credential_ref: 'main' },
    { name: 's3', kind: 'object_store', provider: 's3', bucket: 'b', prefix: 'usage/', region: 'us-east-1', credential_ref: 'main' },
    { name: 'gcs', kind: 'object_store', provider: 'gcs', bucket: 'b', auth_mode: 'cloud_identity' },
    { name: 'dd', kind: 'datadog', site: 'datadoghq.com', service: 'gw', credential_ref: 'dd' },
  )).observability_exporters;
  assert.ok(r[1].kind === 'object_store' && r[1].compression === 'gzip' && r[1].auth_mode === 'credential_ref');
  assert.ok(r[3].kind === 'datadog' && r[3].ddsource === 'tollgate-ai-gateway');
  assertErrors(load(
    { name: 'a', kind: 'object_store', provider: 'ftp', bucket: 'b' },
    { name: 'b', kind: 'object_store', provider: 's3', bucket: 'b', auth_mode: 'cloud_identity', credential_ref: 'x' },
    { name: 'c', kind: 'kafka' },
    { name: 'd', kind: 'datadog', site: 'x', service: 'y', credential_ref: 'z', api_key: 'inline' },
  ), [
    'observability_exporters[0] ("a").provider: must be one of: s3, gcs, azure_blob',
    'observability_exporters[0] ("a").credential_ref: required when auth_mode is credential_ref',
    'observability_exporters[1] ("b").credential_ref: not allowed when auth_mode is cloud_identity',
    'observability_exporters[2] ("c").kind: must be one of: otlp_http, aliyun_sls, object_store, datadog',
    'observability_exporters[3] ("d").api_key: unknown field',
  ]);
});
