import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createClientIpResolver } from './real-ip.ts';

const base = { header: 'x-forwarded-for', recursive: false };

test('without trusted proxies the TCP peer is the client, whatever the header says', () => {
  const r = createClientIpResolver({ ...base, trusted_proxies: [] });
  assert.equal(r('10.0.0.5', '1.2.3.4'), '10.0.0.5');
  assert.equal(r('::ffff:127.0.0.1', undefined), '127.0.0.1');
});

test('a trusted peer yields the last header address (non-recursive)', () => {
  const r = createClientIpResolver({ ...base, trusted_proxies: ['10.0.0.0/8'] });
  assert.equal(r('10.0.0.5', '1.2.3.4, 10.1.1.1'), '10.1.1.1');
  assert.equal(r('192.168.1.1', '1.2.3.4'), '192.168.1.1', 'untrusted peer is not overridden');
});

test('recursive mode skips trusted hops from the right', () => {
  const r = createClientIpResolver({ ...base, recursive: true, trusted_proxies: ['10.0.0.0/8', '127.0.0.1'] });
  assert.equal(r('127.0.0.1', '1.2.3.4, 5.6.7.8, 10.1.1.1'), '5.6.7.8');
  assert.equal(r('127.0.0.1', '10.2.2.2, 10.1.1.1'), '10.2.2.2', 'all trusted: leftmost');
});

test('garbage header entries are ignored', () => {
  const r = createClientIpResolver({ ...base, trusted_proxies: ['127.0.0.1'] });
  assert.equal(r('127.0.0.1', 'not-an-ip'), '127.0.0.1');
  assert.equal(r('127.0.0.1', ['1.2.3.4', 'junk']), '1.2.3.4');
});

test('IPv4-mapped addresses read as IPv4, in the peer and in the header', () => {
  const r = createClientIpResolver({ ...base, trusted_proxies: ['127.0.0.1'] });
  assert.equal(r('::ffff:127.0.0.1', '::ffff:8.8.4.4'), '8.8.4.4');
});
