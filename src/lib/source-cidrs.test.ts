import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileSourceCidrs, isIpOrCidr, sourceAllowed } from './source-cidrs.ts';

test('addresses inside a CIDR or equal to a bare address are allowed', () => {
  const c = compileSourceCidrs(['10.0.0.0/8', '192.168.1.7', '2001:db8::/32']);
  assert.equal(sourceAllowed(c, '10.1.2.3'), true);
  assert.equal(sourceAllowed(c, '192.168.1.7'), true);
  assert.equal(sourceAllowed(c, '192.168.1.8'), false);
  assert.equal(sourceAllowed(c, '2001:db8::5'), true);
  assert.equal(sourceAllowed(c, '2001:db9::5'), false);
  assert.equal(sourceAllowed(c, '11.0.0.1'), false);
});

test('IPv4-mapped IPv6 clients match IPv4 ranges', () => {
  const c = compileSourceCidrs(['127.0.0.0/8']);
  assert.equal(sourceAllowed(c, '::ffff:127.0.0.1'), true);
  assert.equal(sourceAllowed(compileSourceCidrs(['::ffff:10.0.0.0/104']), '10.2.3.4'), true);
});

test('an unresolvable client address is outside every list, even 0.0.0.0/0', () => {
  const c = compileSourceCidrs(['0.0.0.0/0', '::/0']);
  assert.equal(sourceAllowed(c, 'unknown'), false);
  assert.equal(sourceAllowed(c, ''), false);
  assert.equal(sourceAllowed(c, '1.2.3.4'), true);
});

test('isIpOrCidr accepts strict IPv4/IPv6 addresses and CIDRs only', () => {
  for (const ok of ['10.0.0.1', '10.0.0.0/8', '0.0.0.0/0', '::1', 'fd00::/8', '::/0', '2001:db8::/32', '192.168.1.1/32']) {
    assert.equal(isIpOrCidr(ok), true, ok);
  }
  for (const bad of ['', 'localhost', '10.0.0', '127.1', '0x7f.0.0.1', '010.0.0.1', '192.168.010.0/24', '167772161', '10.0.0.0/33', '::1/129', '10.0.0.0/', '/8', '10.0.0.0/8/8', 'fd00::/x']) {
    assert.equal(isIpOrCidr(bad), false, bad);
  }
});

test('an entry in a form a parser reads as another network admits nobody (the loader refuses it too)', () => {
  const c = compileSourceCidrs(['010.0.0.1', '192.168.010.0/24', '10.1']);
  for (const ip of ['8.0.0.1', '192.168.8.5', '192.168.10.5', '10.0.0.1']) assert.equal(sourceAllowed(c, ip), false, ip);
});
