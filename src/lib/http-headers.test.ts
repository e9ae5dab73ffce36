import { test } from 'node:test';
import assert from 'node:assert/strict';
import { headerValue, parseRetryAfter, retryAfterMsOf } from './http-headers.ts';

test('parseRetryAfter reads seconds and HTTP dates, in ms; rejects negatives and junk', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  assert.equal(parseRetryAfter('7', now), 7000);
  assert.equal(parseRetryAfter('0.5', now), 500);
  assert.equal(parseRetryAfter('Thu, 01 Jan 2026 00:00:05 GMT', now), 5000);
  assert.equal(parseRetryAfter('Wed, 31 Dec 2025 23:00:00 GMT', now), 0);
  assert.equal(parseRetryAfter('-1', now), undefined);
  assert.equal(parseRetryAfter('soon', now), undefined);
  assert.equal(parseRetryAfter(' ', now), undefined);
  assert.equal(parseRetryAfter(undefined, now), undefined);
});

test('headerValue takes the first of repeated headers', () => {
  assert.equal(headerValue({ a: ['1', '2'] }, 'a'), '1');
  assert.equal(headerValue({ a: '3' }, 'a'), '3');
  assert.equal(headerValue({}, 'a'), undefined);
});

test('retryAfterMsOf prefers a readable retry-after-ms over Retry-After', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  assert.equal(retryAfterMsOf({ 'retry-after-ms': '250', 'retry-after': '1' }, now), 250);
  assert.equal(retryAfterMsOf({ 'retry-after-ms': '12.6' }, now), 13);
  assert.equal(retryAfterMsOf({ 'retry-after-ms': 'soon', 'retry-after': '2' }, now), 2000);
  assert.equal(retryAfterMsOf({ 'retry-after-ms': '-5', 'retry-after': '2' }, now), 2000);
  assert.equal(retryAfterMsOf({ 'retry-after': '3' }, now), 3000);
  assert.equal(retryAfterMsOf({}, now), undefined);
});
