import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseAddr } from './address.ts';

test('parseAddr accepts IPv4, bracketed IPv6 and hostnames with ports 0-65535', () => {
  assert.deepEqual(parseAddr('127.0.0.1:3000'), { host: '127.0.0.1', port: 3000 });
  assert.deepEqual(parseAddr('0.0.0.0:0'), { host: '0.0.0.0', port: 0 });
  assert.deepEqual(parseAddr('255.255.255.255:65535'), { host: '255.255.255.255', port: 65535 });
  assert.deepEqual(parseAddr('[::1]:3000'), { host: '::1', port: 3000 });
  assert.deepEqual(parseAddr('[::]:80'), { host: '::', port: 80 });
  assert.deepEqual(parseAddr('[2001:db8::1]:443'), { host: '2001:db8::1', port: 443 });
  assert.deepEqual(parseAddr('[::ffff:10.0.0.1]:8080'), { host: '::ffff:10.0.0.1', port: 8080 });
  assert.deepEqual(parseAddr('localhost:8080'), { host: 'localhost', port: 8080 });
  assert.deepEqual(parseAddr('gw-1.internal.example.com:9090'), { host: 'gw-1.internal.example.com', port: 9090 });
});

test('parseAddr rejects malformed addresses, showing the value and the reason', () => {
  const cases: Array<[string, string]> = [
    ['foo', 'expected host:port'],
    ['', 'expected host:port'],
    [':3000', 'expected host:port'],
    ['127.0.0.1', 'expected host:port'],
    ['127.0.0.1:', 'expected host:port'],
    ['127.0.0.1:abc', 'expected host:port'],
    ['127.0.0.1:-1', 'expected host:port'],
    ['127.0.0.1:3000 ', 'expected host:port'],
    ['127.0.0.1:123456', 'expected host:port'],
    ['127.0.0.1:65536', 'port must be 0-65535'],
    ['127.0.0.1:99999', 'port must be 0-65535'],
    ['256.1.1.1:80', 'invalid IPv4 literal'],
    ['1.2.3:80', 'invalid IPv4 literal'],
    ['127.1:80', 'invalid IPv4 literal'],
    ['::1:3000', 'IPv6 literals must be bracketed'],
    ['[::1]', 'expected host:port'],
    ['[::1:3000', 'expected host:port'],
    ['[zz::1]:3000', 'invalid IPv6 literal'],
    ['[127.0.0.1]:3000', 'invalid IPv6 literal'],
    ['-host:80', 'invalid host'],
    ['host_name:80', 'invalid host'],
    ['exa mple.com:80', 'invalid host'],
    ['host.:80', 'invalid host'],
    ['http://localhost:80', 'not a URL'],
    ['a:b:80', 'invalid host'],
  ];
  for (const [addr, why] of cases) {
    assert.throws(
      () => parseAddr(addr),
      (e: Error) => e.message.startsWith(`invalid address ${JSON.stringify(addr)} (`) && e.message.includes(why),
      `${JSON.stringify(addr)} should fail with "${why}"`,
    );
  }
  assert.throws(() => parseAddr('foo'), { message: 'invalid address "foo" (expected host:port)' });
});
