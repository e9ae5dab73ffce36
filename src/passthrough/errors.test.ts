import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorEnvelope, errorFrame, passthroughError } from './errors.ts';

test('the gateway envelope; a policy refusal adds error.policy', () => {
  const e = passthroughError('route_access_forbidden', 'no');
  assert.deepEqual(JSON.parse(errorEnvelope(e)), { error: { message: 'no', type: e.type, param: null, code: 'route_access_forbidden' } });
  const policy = { id: 'p-1', name: 'cap' };
  const refused = { code: 'rate_limit_exceeded', status: 429, type: 'rate_limit_error', message: 'request limit exceeded (requests)', policy };
  assert.deepEqual(JSON.parse(errorEnvelope(refused)).error.policy, policy);
  assert.ok(errorFrame(refused).includes('"policy":{"id":"p-1","name":"cap"}'));
});
