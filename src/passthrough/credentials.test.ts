import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileCredential, isMessagesFamily } from './credentials.ts';

const pk = { id: 'pk1', provider: 'openai', api_key: 'sk-up' };

test('inject: a Bearer token for every provider outside the messages family', () => {
  const c = compileCredential('inject', 'pk1', pk);
  assert.equal(c.mode, 'inject');
  if (c.mode !== 'inject') return;
  assert.deepEqual(c.headers, [['authorization', 'Bearer sk-up']]);
  assert.deepEqual(c.stripHeaders, ['authorization', 'cookie', 'set-cookie', 'x-api-key']);
  assert.equal(c.tls, undefined);
  assert.equal(c.provider, 'openai');
});

test('inject: the messages family gets x-api-key and the version header (by provider or adapter)', () => {
  for (const key of [{ ...pk, provider: 'Anthropic' }, { ...pk, provider: 'my-proxy', adapter: 'anthropic' }]) {
    assert.equal(isMessagesFamily(key), true);
    const c = compileCredential('inject', 'pk1', key);
    assert.ok(c.mode === 'inject');
    assert.deepEqual(c.headers, [['x-api-key', 'sk-up'], ['anthropic-version', '2023-06-01']]);
  }
});

test('the provider key strip_headers and TLS settings are carried', () => {
  const c = compileCredential('inject', 'pk1', { ...pk, strip_headers: ['X-Org'], tls: { verify: false } });
  assert.ok(c.mode === 'inject');
  assert.deepEqual(c.stripHeaders, ['x-org']);
  assert.deepEqual(c.tls, { caCert: undefined, verify: false });
});

test('inject without a resolvable key fails closed', () => {
  assert.equal(compileCredential('inject', undefined, undefined).mode, 'unavailable');
  assert.equal(compileCredential('inject', 'gone', undefined).mode, 'unavailable');
  assert.equal(compileCredential('inject', 'pk1', { ...pk, api_key: ' ' }).mode, 'unavailable');
});

test('forward_client carries no credential', () => {
  assert.deepEqual(compileCredential('forward_client', undefined, undefined), { mode: 'forward_client' });
});
