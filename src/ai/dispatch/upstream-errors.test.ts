import { test } from 'node:test';
import assert from 'node:assert/strict';
import { failureKind, statusLine, upstreamFailureError, upstreamStatusError } from './upstream-errors.ts';
import type { ClassifiedError } from '../providers/contract.ts';

const KEY = 'sk-provider-key-0123456789';
const empty: ClassifiedError = { errorClass: 'upstream_status', retryable: false, retryAfterMs: undefined, message: undefined, type: undefined, code: undefined, param: undefined };

test('4xx keeps status and upstream fields', () => {
  const e = upstreamStatusError(400, { ...empty, message: 'bad temp', type: 'invalid_request_error', code: 'invalid_value', param: 'temperature' }, KEY);
  assert.equal(e.status, 400);
  assert.equal(e.message, 'bad temp');
  assert.equal(e.type, 'invalid_request_error');
  assert.equal(e.publicCode, 'invalid_value');
  assert.equal(e.param, 'temperature');
});

test('a 4xx message that echoes the provider key is relayed with the key masked', () => {
  const e = upstreamStatusError(401, { ...empty, message: `Incorrect API key provided: Bearer ${KEY}` }, KEY);
  assert.equal(e.message, 'Incorrect API key provided: Bearer [REDACTED]');
});

test('an empty 4xx body reads as the status line', () => {
  const e = upstreamStatusError(404, empty, KEY);
  assert.equal(e.message, 'upstream returned 404 Not Found');
  assert.equal(e.type, 'upstream_error');
});

test('429 relays Retry-After in seconds', () => {
  assert.deepEqual(upstreamStatusError(429, { ...empty, retryAfterMs: 1500 }, KEY).headers, { 'retry-after': '2', 'retry-after-ms': '1500' });
});

test('5xx becomes 502 with the status line only', () => {
  const e = upstreamStatusError(503, { ...empty, message: 'internal detail' }, KEY);
  assert.equal(e.status, 502);
  assert.equal(e.message, 'upstream returned 503 Service Unavailable');
  assert.equal(statusLine(599), 'upstream returned 599');
});

test('timeouts are 504, transport failures 502', () => {
  assert.equal(upstreamFailureError({ ok: false, kind: 'timeout', message: 't' }).status, 504);
  assert.equal(upstreamFailureError({ ok: false, kind: 'transport', message: 't' }).status, 502);
});

test('a body that does not decode is upstream_decode, as the code and as the error kind', () => {
  const f = { ok: false, kind: 'decode', message: 'upstream body is not valid gzip' } as const;
  assert.equal(upstreamFailureError(f).code, 'upstream_decode');
  assert.equal(upstreamFailureError(f).status, 502);
  assert.equal(failureKind(f), 'upstream_decode');
});
