import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inBandErrorStatus, inBandStatusOf } from './in-band-status.ts';

test('in-band error types and codes map to their 4xx; anything else is undefined (a 502 upstream failure)', () => {
  assert.equal(inBandStatusOf('rate_limit_error'), 429);
  assert.equal(inBandStatusOf('insufficient_quota'), 429);
  assert.equal(inBandStatusOf('invalid_request_error'), 400);
  assert.equal(inBandStatusOf('not_found_error'), 404);
  assert.equal(inBandStatusOf('overloaded_error'), undefined);
  assert.equal(inBandStatusOf('toString'), undefined, 'prototype names are not types');
  assert.equal(inBandStatusOf(429), undefined);
});

test('the error status: its own 4xx, by number or by type/code; otherwise 502', () => {
  assert.equal(inBandErrorStatus({ status: 404 }), 404);
  assert.equal(inBandErrorStatus({ code: 429 }), 429);
  assert.equal(inBandErrorStatus({ status_code: '413' }), 413);
  assert.equal(inBandErrorStatus({ status: 503 }), 502);
  assert.equal(inBandErrorStatus({ type: 'authentication_error' }), 401);
  assert.equal(inBandErrorStatus({ type: 'api_error' }), 502);
  assert.equal(inBandErrorStatus('x'), 502);
});
