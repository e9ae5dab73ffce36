import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyAnthropicError } from './errors.ts';
import { parseRetryAfter } from '../../../lib/http-headers.ts';
import { anthropicAdapter } from './index.ts';

const envelope = (type: string, message: string): string => JSON.stringify({ type: 'error', error: { type, message }, request_id: 'req_011CSHoEeqs5C35K2UUqR7Fy' });

test('error classes by status', () => {
  const cases: [number, string, string, boolean][] = [
    [401, 'authentication_error', 'invalid_credentials', false],
    [403, 'permission_error', 'invalid_credentials', false],
    [429, 'rate_limit_error', 'rate_limited', false],
    [400, 'invalid_request_error', 'invalid_request', false],
    [404, 'not_found_error', 'invalid_request', false],
    [413, 'request_too_large', 'invalid_request', false],
    [408, 'timeout_error', 'upstream_status', true],
    [500, 'api_error', 'upstream_status', true],
    [503, 'api_error', 'upstream_status', true],
    [529, 'overloaded_error', 'upstream_status', true],
  ];
  for (const [status, type, errorClass, retryable] of cases) {
    const c = classifyAnthropicError(status, envelope(type, `boom ${status}`), {});
    assert.equal(c.errorClass, errorClass, String(status));
    assert.equal(c.retryable, retryable, String(status));
    assert.equal(c.type, type);
    assert.equal(c.message, `boom ${status}`);
    assert.equal(c.code, null);
    assert.equal(c.param, null);
  }
});

test('a 400 whose message names the content filtering policy is a content_filter error', () => {
  assert.equal(classifyAnthropicError(400, envelope('invalid_request_error', 'Output blocked by content filtering policy'), {}).errorClass, 'content_filter');
  assert.equal(classifyAnthropicError(400, envelope('invalid_request_error', 'max_tokens: field required'), {}).errorClass, 'invalid_request');
});

test('retry-after in seconds or as an HTTP date', () => {
  assert.equal(classifyAnthropicError(429, envelope('rate_limit_error', 'slow down'), { 'retry-after': '7' }).retryAfterMs, 7000);
  assert.equal(classifyAnthropicError(529, '', { 'retry-after': ['2', '9'] }).retryAfterMs, 2000);
  assert.equal(classifyAnthropicError(500, '', {}).retryAfterMs, undefined);
  const now = Date.parse('2025-01-01T00:00:00Z');
  assert.equal(parseRetryAfter('Wed, 01 Jan 2025 00:00:30 GMT', now), 30_000);
  assert.equal(parseRetryAfter('Tue, 31 Dec 2024 23:00:00 GMT', now), 0);
  assert.equal(parseRetryAfter('-1', now), undefined);
  assert.equal(parseRetryAfter('soon', now), undefined);
});

test('bodies that are not the envelope leave message and type undefined', () => {
  const c = classifyAnthropicError(502, '<html>Bad Gateway</html>', {});
  assert.equal(c.errorClass, 'upstream_status');
  assert.equal(c.message, undefined);
  assert.equal(c.type, undefined);
});

test('the adapter classifies with this module', () => {
  assert.equal(anthropicAdapter.classifyError(429, '', {}).errorClass, 'rate_limited');
});
