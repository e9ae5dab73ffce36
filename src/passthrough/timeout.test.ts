import { test } from 'node:test';
import assert from 'node:assert/strict';
import { exchangeTimeoutMs } from './timeout.ts';

test('the route value wins; then upstream.stream_timeout_ms, then upstream.timeout_ms', () => {
  assert.equal(exchangeTimeoutMs(2500, { timeoutMs: 6_000_000, streamTimeoutMs: 30_000 }), 2500);
  assert.equal(exchangeTimeoutMs(undefined, { timeoutMs: 6_000_000, streamTimeoutMs: 30_000 }), 30_000);
  assert.equal(exchangeTimeoutMs(undefined, { timeoutMs: 6_000_000, streamTimeoutMs: 0 }), 6_000_000);
  assert.equal(exchangeTimeoutMs(undefined, { timeoutMs: 0, streamTimeoutMs: 9000 }), 9000);
});

test('only both deployment values at 0 remove the bound', () => {
  assert.equal(exchangeTimeoutMs(undefined, { timeoutMs: 0, streamTimeoutMs: 0 }), 0);
});
