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

test('an entry that is not an address ends the walk: nothing the client wrote further left is believed', () => {
  const r = createClientIpResolver({ ...base, trusted_proxies: ['127.0.0.1'] });
  assert.equal(r('127.0.0.1', 'not-an-ip'), '127.0.0.1');
  assert.equal(r('127.0.0.1', ['1.2.3.4', 'junk']), '127.0.0.1');
  assert.equal(r('127.0.0.1', '10.1.2.3, unknown'), '127.0.0.1');
  const recursive = createClientIpResolver({ ...base, recursive: true, trusted_proxies: ['127.0.0.1', '10.0.0.0/8'] });
  // The trusted hop 10.9.9.9 is reached, then `unknown`: the walk stops at the last address read.
  assert.equal(recursive('127.0.0.1', '1.2.3.4, unknown, 10.9.9.9'), '10.9.9.9');
  assert.equal(recursive('127.0.0.1', '1.2.3.4, bogus'), '127.0.0.1');
});

test('an ip:port entry is its address (a load balancer that adds the port)', () => {
  const r = createClientIpResolver({ ...base, trusted_proxies: ['127.0.0.1'] });
  assert.equal(r('127.0.0.1', '10.1.2.3, 203.0.113.9:51234'), '203.0.113.9');
  assert.equal(r('127.0.0.1', '[2001:db8::1]:443'), '2001:db8::1');
  assert.equal(r('127.0.0.1', '[2001:db8::2]'), '2001:db8::2');
  assert.equal(r('127.0.0.1', '2001:db8::3'), '2001:db8::3');
  assert.equal(r('127.0.0.1', '10.1.2.3, 203.0.113.9:port'), '127.0.0.1');
  assert.equal(r('127.0.0.1', '10.1.2.3, [2001:db8::1]x'), '127.0.0.1');
});

test('IPv4-mapped addresses read as IPv4, in the peer and in the header', () => {
  const r = createClientIpResolver({ ...base, trusted_proxies: ['127.0.0.1'] });
  assert.equal(r('::ffff:127.0.0.1', '::ffff:8.8.4.4'), '8.8.4.4');
});
