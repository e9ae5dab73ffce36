import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Value } from '@sinclair/typebox/value';
import { COOLDOWN_DEFAULTS, HealthTracker, LATENCY_EWMA_ALPHA, cooldownPolicy } from './health.ts';
import { CooldownSchema, DEFAULT_COOLDOWN_TRIGGER_STATUSES } from '../../resources/model.ts';

function clock(start = Date.parse('2026-01-01T00:00:00Z')) {
  const c = { t: start, now: () => c.t };
  return c;
}

const defaults = cooldownPolicy(undefined);
const s503 = { errorClass: 'upstream_status', status: 503 } as const;

test('defaults match the resource schema', () => {
  assert.deepEqual([...COOLDOWN_DEFAULTS.trigger_statuses], DEFAULT_COOLDOWN_TRIGGER_STATUSES);
  const schemaDefaults = Value.Default(CooldownSchema, {}) as Record<string, unknown>;
  assert.deepEqual(Object.keys(schemaDefaults).sort(), Object.keys(COOLDOWN_DEFAULTS).sort());
  for (const [k, v] of Object.entries(schemaDefaults)) assert.deepEqual(v, (COOLDOWN_DEFAULTS as Record<string, unknown>)[k], k);
  assert.equal(defaults.enabled, true);
  assert.equal(defaults.defaultMs, 30_000);
  assert.equal(defaults.maxMs, 600_000);
  assert.equal(defaults.failThreshold, 1);
});

test('one triggering failure starts a cooldown by default, which expires with the clock', () => {
  const c = clock();
  const h = new HealthTracker({ now: c.now });
  assert.equal(h.isCoolingDown('a'), false);
  assert.equal(h.recordFailure('a', s503, defaults), true);
  assert.equal(h.isCoolingDown('a'), true);
  assert.equal(h.cooldownUntil('a'), c.t + 30_000);
  c.t += 29_999;
  assert.equal(h.isCoolingDown('a'), true);
  c.t += 1;
  assert.equal(h.isCoolingDown('a'), false);
  assert.equal(h.cooldownUntil('a'), undefined);
  assert.equal(h.isCoolingDown('b'), false);
});

test('a threshold waits for that many triggering failures in a row; success resets the streak', () => {
  const h = new HealthTracker({ now: clock().now });
  const p = cooldownPolicy({}, 3);
  assert.equal(h.recordFailure('a', s503, p), false);
  assert.equal(h.recordFailure('a', s503, p), false);
  h.recordSuccess('a');
  assert.equal(h.recordFailure('a', s503, p), false);
  assert.equal(h.recordFailure('a', s503, p), false);
  assert.equal(h.isCoolingDown('a'), false);
  assert.equal(h.recordFailure('a', s503, p), true);
  assert.equal(h.isCoolingDown('a'), true);
});

test('Retry-After is honoured, capped at max_seconds, ignored when honor_retry_after is off', () => {
  const c = clock();
  const h = new HealthTracker({ now: c.now });
  h.recordFailure('short', { errorClass: 'rate_limited', status: 429, retryAfterMs: 5000 }, defaults);
  assert.equal(h.cooldownUntil('short'), c.t + 5000);
  h.recordFailure('long', { errorClass: 'rate_limited', status: 429, retryAfterMs: 120_000 }, defaults);
  assert.equal(h.cooldownUntil('long'), c.t + 120_000);
  h.recordFailure('capped', { errorClass: 'rate_limited', status: 429, retryAfterMs: 3_600_000 }, cooldownPolicy({ max_seconds: 60 }));
  assert.equal(h.cooldownUntil('capped'), c.t + 60_000);
  h.recordFailure('ignored', { errorClass: 'rate_limited', status: 429, retryAfterMs: 5000 }, cooldownPolicy({ honor_retry_after: false, default_seconds: 10 }));
  assert.equal(h.cooldownUntil('ignored'), c.t + 10_000);
  // The default length is capped too.
  h.recordFailure('def', s503, cooldownPolicy({ default_seconds: 900, max_seconds: 600 }));
  assert.equal(h.cooldownUntil('def'), c.t + 600_000);
});

test('a shorter cooldown never cuts a longer one short', () => {
  const c = clock();
  const h = new HealthTracker({ now: c.now });
  h.recordFailure('a', { errorClass: 'rate_limited', status: 429, retryAfterMs: 100_000 }, defaults);
  h.recordFailure('a', s503, defaults);
  assert.equal(h.cooldownUntil('a'), c.t + 100_000);
});

test('success clears failures and the cooldown', () => {
  const h = new HealthTracker({ now: clock().now });
  h.recordFailure('a', s503, defaults);
  h.recordFailure('a', s503, defaults);
  assert.equal(h.peek('a')?.consecutiveFailures, 2);
  h.recordSuccess('a', 100);
  assert.equal(h.peek('a')?.consecutiveFailures, 0);
  assert.equal(h.isCoolingDown('a'), false);
});

test('trigger statuses: listed ones cool down, others only count, caller faults are ignored', () => {
  const h = new HealthTracker({ now: clock().now });
  for (const s of [401, 408, 429, 500, 502, 503, 504]) {
    assert.equal(h.recordFailure(`t${s}`, { errorClass: 'upstream_status', status: s }, defaults), true, String(s));
  }
  assert.equal(h.recordFailure('a', { errorClass: 'upstream_status', status: 501 }, defaults), false);
  assert.equal(h.peek('a')?.consecutiveFailures, 1);
  assert.equal(h.recordFailure('b', { errorClass: 'invalid_request', status: 400 }, defaults), false);
  assert.equal(h.recordFailure('b', { errorClass: 'content_filter', status: 400 }, defaults), false);
  assert.equal(h.peek('b'), undefined);
  // An invalid_request whose status is a trigger (a 408) is the target's fault.
  assert.equal(h.recordFailure('c', { errorClass: 'invalid_request', status: 408 }, defaults), true);
  // rate_limited without a status is a 429.
  assert.equal(h.recordFailure('d', { errorClass: 'rate_limited' }, defaults), true);
  const custom = cooldownPolicy({ trigger_statuses: [418] });
  assert.equal(h.recordFailure('e', { errorClass: 'upstream_status', status: 503 }, custom), false);
  assert.equal(h.recordFailure('e', { errorClass: 'invalid_request', status: 418 }, custom), true);
});

test('timeout and transport triggers follow their switches', () => {
  const h = new HealthTracker({ now: clock().now });
  assert.equal(h.recordFailure('a', { errorClass: 'timeout' }, defaults), true);
  assert.equal(h.recordFailure('b', { errorClass: 'transport' }, defaults), true);
  assert.equal(h.recordFailure('b2', { errorClass: 'stream_aborted' }, defaults), true);
  const off = cooldownPolicy({ trigger_on_timeout: false, trigger_on_transport: false });
  assert.equal(h.recordFailure('c', { errorClass: 'timeout' }, off), false);
  assert.equal(h.recordFailure('d', { errorClass: 'transport' }, off), false);
  assert.equal(h.peek('c')?.consecutiveFailures, 1);
  // A decode failure counts but never cools down.
  assert.equal(h.recordFailure('e', { errorClass: 'upstream_decode' }, defaults), false);
  assert.equal(h.peek('e')?.consecutiveFailures, 1);
});

test('a disabled cooldown never cools down but still counts', () => {
  const h = new HealthTracker({ now: clock().now });
  const off = cooldownPolicy({ enabled: false });
  assert.equal(h.recordFailure('a', s503, off), false);
  assert.equal(h.recordFailure('a', { errorClass: 'timeout' }, off), false);
  assert.equal(h.isCoolingDown('a'), false);
  assert.equal(h.peek('a')?.consecutiveFailures, 2);
});

test('in-flight counts never go negative', () => {
  const h = new HealthTracker({ now: clock().now });
  h.start('a');
  h.start('a');
  assert.equal(h.peek('a')?.inFlight, 2);
  h.finish('a');
  h.finish('a');
  h.finish('a');
  h.finish('never-started');
  assert.equal(h.peek('a')?.inFlight, 0);
  assert.equal(h.peek('never-started'), undefined);
});

test('latency EWMA: the first sample, then alpha-weighted', () => {
  const h = new HealthTracker({ now: clock().now });
  h.recordSuccess('a');
  assert.equal(h.peek('a')?.latencyEwmaMs, undefined);
  h.recordSuccess('a', 100);
  assert.equal(h.peek('a')?.latencyEwmaMs, 100);
  h.recordSuccess('a', 200);
  assert.equal(h.peek('a')?.latencyEwmaMs, 100 + LATENCY_EWMA_ALPHA * 100);
  h.recordSuccess('a', Number.NaN);
  h.recordSuccess('a', Infinity);
  assert.equal(h.peek('a')?.latencyEwmaMs, 100 + LATENCY_EWMA_ALPHA * 100);
});

test('snapshot: JSON-able rows with ISO times and degraded / down states', () => {
  const c = clock();
  const h = new HealthTracker({ now: c.now });
  h.start('b');
  h.recordSuccess('b', 42);
  for (let i = 0; i < 4; i++) h.recordFailure('a', { errorClass: 'upstream_status', status: 501 }, defaults);
  for (let i = 0; i < 8; i++) h.recordFailure('c', { errorClass: 'timeout' }, defaults);
  h.setUnhealthy('d', true);
  const rows = h.snapshot();
  assert.deepEqual(rows.map((r) => r.key), ['a', 'b', 'c', 'd']);
  assert.deepEqual(rows[0], {
    key: 'a',
    state: 'degraded',
    in_flight: 0,
    latency_ewma_ms: null,
    consecutive_failures: 4,
    cooling_down_until: null,
    unhealthy: false,
    last_error: 'upstream_status 501',
    last_error_at: '2026-01-01T00:00:00.000Z',
  });
  assert.equal(rows[1].state, 'healthy');
  assert.equal(rows[1].in_flight, 1);
  assert.equal(rows[1].latency_ewma_ms, 42);
  assert.equal(rows[2].state, 'down');
  assert.equal(rows[2].cooling_down_until, '2026-01-01T00:00:30.000Z');
  assert.equal(rows[2].last_error, 'timeout');
  assert.equal(rows[3].unhealthy, true);
  assert.deepEqual(JSON.parse(JSON.stringify(rows)), rows);
  c.t += 30_000;
  assert.equal(h.snapshot()[2].cooling_down_until, null);
});

test('retain forgets removed targets unless requests are in flight', () => {
  const h = new HealthTracker({ now: clock().now });
  h.recordSuccess('keep', 1);
  h.recordSuccess('gone', 1);
  h.start('busy');
  h.retain(new Set(['keep']));
  assert.deepEqual(h.snapshot().map((r) => r.key), ['busy', 'keep']);
});

test('snapshot(keys): a row for every listed target, idle ones healthy, and tracked ones besides', () => {
  const h = new HealthTracker({ now: clock().now });
  h.recordFailure('used', { errorClass: 'transport' }, defaults);
  h.start('removed-in-flight');
  const rows = h.snapshot(['untouched', 'used', 'untouched']);
  assert.deepEqual(rows.map((r) => r.key), ['removed-in-flight', 'untouched', 'used']);
  assert.deepEqual(rows[1], {
    key: 'untouched',
    state: 'healthy',
    in_flight: 0,
    latency_ewma_ms: null,
    consecutive_failures: 0,
    cooling_down_until: null,
    unhealthy: false,
    last_error: null,
    last_error_at: null,
  });
  assert.equal(rows[2].consecutive_failures, 1);
  assert.equal(rows[0].in_flight, 1);
  // Listing a target does not start tracking it.
  assert.deepEqual(h.snapshot().map((r) => r.key), ['removed-in-flight', 'used']);
});
