import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  attemptKind,
  backoffDelayMs,
  decideNext,
  failureDisposition,
  resolveRetries,
  retrySettings,
  type AttemptFailure,
  type AttemptState,
} from './retry-policy.ts';

const plain = retrySettings({});
const fresh: AttemptState = { targetRetries: undefined, retriesUsed: 0, fallbacksUsed: 0, hasNextTarget: true };

test('retryable by default: 5xx, 408, timeout, transport, decode, stream abort, in-band without status', () => {
  const cases: AttemptFailure[] = [
    { errorClass: 'upstream_status', status: 500 },
    { errorClass: 'upstream_status', status: 502 },
    { errorClass: 'upstream_status', status: 503 },
    { errorClass: 'upstream_status', status: 529 },
    { errorClass: 'invalid_request', status: 408 },
    { errorClass: 'timeout' },
    { errorClass: 'transport' },
    { errorClass: 'upstream_decode' },
    { errorClass: 'stream_aborted' },
    { errorClass: 'upstream_in_band' },
    { errorClass: 'upstream_in_band', status: 503 },
  ];
  for (const f of cases) assert.equal(failureDisposition(f, plain), 'retryable', JSON.stringify(f));
});

test('never retried: content filter, invalid config, invalid credentials, invalid requests', () => {
  const cases: AttemptFailure[] = [
    { errorClass: 'content_filter', status: 400 },
    { errorClass: 'invalid_config' },
    { errorClass: 'invalid_credentials', status: 401 },
    { errorClass: 'invalid_credentials', status: 403 },
    { errorClass: 'invalid_request', status: 400 },
    { errorClass: 'invalid_request', status: 404 },
    { errorClass: 'invalid_request', status: 422 },
    { errorClass: 'upstream_in_band', status: 400 },
  ];
  for (const f of cases) {
    assert.equal(failureDisposition(f, plain), 'fatal', JSON.stringify(f));
    assert.equal(decideNext(f, plain, fresh), 'stop', JSON.stringify(f));
  }
});

test('429 neither retries nor falls over without retry_on_429', () => {
  const f: AttemptFailure = { errorClass: 'rate_limited', status: 429 };
  assert.equal(decideNext(f, plain, fresh), 'stop');
  assert.equal(failureDisposition({ errorClass: 'rate_limited' }, plain), 'fatal');
  const on = retrySettings({ retry_on_429: true, retries: 1 });
  assert.equal(decideNext(f, on, fresh), 'retry_same');
  assert.equal(failureDisposition({ errorClass: 'rate_limited' }, on), 'retryable');
});

test('fallback_on_statuses falls over without same-target retries', () => {
  const s = retrySettings({ fallback_on_statuses: [404, 429, 401], retries: 3 });
  assert.equal(failureDisposition({ errorClass: 'invalid_request', status: 404 }, s), 'fallback_only');
  assert.equal(decideNext({ errorClass: 'invalid_request', status: 404 }, s, fresh), 'fallback');
  assert.equal(decideNext({ errorClass: 'rate_limited', status: 429 }, s, fresh), 'fallback');
  assert.equal(decideNext({ errorClass: 'invalid_credentials', status: 401 }, s, fresh), 'fallback');
  assert.equal(decideNext({ errorClass: 'invalid_request', status: 400 }, s, fresh), 'stop');
  // A listed status never turns a content-filter refusal into a fallover.
  assert.equal(decideNext({ errorClass: 'content_filter', status: 404 }, s, fresh), 'stop');
  // Nothing to fall over to: stop.
  assert.equal(decideNext({ errorClass: 'invalid_request', status: 404 }, s, { ...fresh, hasNextTarget: false }), 'stop');
});

test('same-target retries up to the limit, then fall over, then stop', () => {
  const s = retrySettings({ retries: 2 });
  const f: AttemptFailure = { errorClass: 'upstream_status', status: 503 };
  assert.equal(decideNext(f, s, { ...fresh, retriesUsed: 0 }), 'retry_same');
  assert.equal(decideNext(f, s, { ...fresh, retriesUsed: 1 }), 'retry_same');
  assert.equal(decideNext(f, s, { ...fresh, retriesUsed: 2 }), 'fallback');
  assert.equal(decideNext(f, s, { ...fresh, retriesUsed: 2, hasNextTarget: false }), 'stop');
});

test('retries: target over group; deployment default only when no fallback is left', () => {
  assert.equal(resolveRetries(1, 3, 2, true), 1);
  assert.equal(resolveRetries(undefined, 3, 2, true), 3);
  assert.equal(resolveRetries(undefined, undefined, 2, true), 0);
  assert.equal(resolveRetries(undefined, undefined, 2, false), 2);
  const f: AttemptFailure = { errorClass: 'timeout' };
  // Nothing configured, a fallback queued: fail over at once.
  assert.equal(decideNext(f, plain, fresh), 'fallback');
  // Nothing configured, last target: the deployment default (2) applies.
  const last = { ...fresh, hasNextTarget: false };
  assert.equal(decideNext(f, plain, { ...last, retriesUsed: 1 }), 'retry_same');
  assert.equal(decideNext(f, plain, { ...last, retriesUsed: 2 }), 'stop');
  assert.equal(decideNext(f, retrySettings({}, 0), last), 'stop');
  // The target's own retries win over the group's.
  assert.equal(decideNext(f, retrySettings({ retries: 0 }), { ...fresh, targetRetries: 1 }), 'retry_same');
});

test('a Retry-After over 5 s falls over instead of waiting', () => {
  const s = retrySettings({ retries: 2, retry_on_429: true });
  assert.equal(decideNext({ errorClass: 'rate_limited', status: 429, retryAfterMs: 5000 }, s, fresh), 'retry_same');
  assert.equal(decideNext({ errorClass: 'rate_limited', status: 429, retryAfterMs: 5001 }, s, fresh), 'fallback');
  assert.equal(decideNext({ errorClass: 'upstream_status', status: 503, retryAfterMs: 60_000 }, s, { ...fresh, hasNextTarget: false }), 'stop');
});

test('max_fallbacks bounds the other targets tried', () => {
  const f: AttemptFailure = { errorClass: 'upstream_status', status: 500 };
  const one = retrySettings({ max_fallbacks: 1, retries: 0 });
  assert.equal(decideNext(f, one, { ...fresh, fallbacksUsed: 0 }), 'fallback');
  assert.equal(decideNext(f, one, { ...fresh, fallbacksUsed: 1 }), 'stop');
  assert.equal(decideNext(f, retrySettings({ max_fallbacks: 0, retries: 0 }), fresh), 'stop');
  // With the fallback budget spent, an unconfigured target gets the deployment retries.
  assert.equal(decideNext(f, retrySettings({ max_fallbacks: 1 }), { ...fresh, fallbacksUsed: 1 }), 'retry_same');
  // Default: every later target.
  assert.equal(decideNext(f, retrySettings({ retries: 0 }), { ...fresh, fallbacksUsed: 50 }), 'fallback');
});

test('backoff: 250 ms doubling, capped at 2 s, plus 0-250 ms jitter', () => {
  const low = () => 0;
  const high = () => 0.999999;
  assert.equal(backoffDelayMs(1, undefined, low), 250);
  assert.equal(backoffDelayMs(2, undefined, low), 500);
  assert.equal(backoffDelayMs(3, undefined, low), 1000);
  assert.equal(backoffDelayMs(4, undefined, low), 2000);
  assert.equal(backoffDelayMs(10, undefined, low), 2000);
  assert.equal(backoffDelayMs(1, undefined, high), 499);
  assert.equal(backoffDelayMs(10, undefined, high), 2249);
  assert.equal(backoffDelayMs(1, undefined, () => 0.5), 375);
});

test('backoff honours a Retry-After of at most 5 s instead', () => {
  const r = () => 0.5;
  assert.equal(backoffDelayMs(1, 3000, r), 3000);
  assert.equal(backoffDelayMs(3, 0, r), 0);
  assert.equal(backoffDelayMs(1, 5000, r), 5000);
  assert.equal(backoffDelayMs(1, 9000, r), 375);
});

test('attempt kinds', () => {
  assert.equal(attemptKind(undefined), 'initial');
  assert.equal(attemptKind('retry_same'), 'retry');
  assert.equal(attemptKind('fallback'), 'fallback');
});

test('x-should-retry: false stops same-target retries but not failover; true widens nothing', () => {
  const retrying = retrySettings({ retries: 2 });
  const no: AttemptFailure = { errorClass: 'upstream_status', status: 500, shouldRetry: false };
  assert.equal(decideNext(no, retrying, fresh), 'fallback');
  assert.equal(decideNext(no, retrying, { ...fresh, hasNextTarget: false }), 'stop');
  assert.equal(decideNext({ ...no, shouldRetry: undefined }, retrying, fresh), 'retry_same');
  assert.equal(decideNext({ errorClass: 'invalid_request', status: 400, shouldRetry: true }, retrying, fresh), 'stop');
});
