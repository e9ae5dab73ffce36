import { test } from 'node:test';
import assert from 'node:assert/strict';
import { preserveHostEndpoint, targetUrlEndpoint } from './upstream-endpoint.ts';

test('preserve_host targets https://<host> on port 443', () => {
  const e = preserveHostEndpoint('proxy.githubcopilot.com', undefined);
  assert.equal(e.origin, 'https://proxy.githubcopilot.com');
  assert.equal(e.protocol, 'https:');
  assert.equal(e.hostname, 'proxy.githubcopilot.com');
  assert.equal(e.port, 443);
  assert.equal(preserveHostEndpoint('[::1]', undefined).hostname, '::1');
});

test('preserve_host never builds an origin from text that is not a normalized host', () => {
  for (const host of ['', 'a%2eb.example.com', 'evil@a.example.com', 'A.example.com', 'a.example.com:443', 'a/b.example.com']) {
    assert.throws(() => preserveHostEndpoint(host, undefined), /not a normalized host/, host);
  }
});

test('one pool per TLS setting, shared by every host', () => {
  const a = preserveHostEndpoint('a.example.com', undefined);
  const b = preserveHostEndpoint('b.example.com', undefined);
  assert.equal(a.pools, b.pools);
  const insecure = preserveHostEndpoint('a.example.com', { caCert: undefined, verify: false });
  assert.notEqual(insecure.pools, a.pools);
  assert.equal(preserveHostEndpoint('c.example.com', { caCert: undefined, verify: false }).pools, insecure.pools);
  assert.equal(insecure.pools.tls?.verify, false);
});

test('a target_url uses the shared origin pool unless its key has TLS settings', () => {
  const plain = targetUrlEndpoint(new URL('https://api.example.com/v1'), undefined);
  assert.equal(plain.origin, 'https://api.example.com');
  assert.equal(plain.port, 443);
  const withTls = targetUrlEndpoint(new URL('https://api.example.com/v1'), { caCert: undefined, verify: false });
  assert.notEqual(withTls.pools, plain.pools);
  // TLS settings do not apply to plain http targets.
  const http = targetUrlEndpoint(new URL('http://10.0.0.1:8080/x'), { caCert: undefined, verify: false });
  assert.equal(http.port, 8080);
  assert.equal(http.pools, targetUrlEndpoint(new URL('http://10.0.0.1:8080/y'), undefined).pools);
});
