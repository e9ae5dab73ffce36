import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normalizeHost, wildcardKey } from './host.ts';

test('hosts are lowercased and lose a numeric port and a trailing dot', () => {
  assert.equal(normalizeHost('API.Example.COM'), 'api.example.com');
  assert.equal(normalizeHost('api.example.com:8443'), 'api.example.com');
  assert.equal(normalizeHost('proxy.githubcopilot.com:443'), 'proxy.githubcopilot.com');
  assert.equal(normalizeHost('api.example.com.'), 'api.example.com');
  assert.equal(normalizeHost('api.example.com:'), 'api.example.com');
  assert.equal(normalizeHost(undefined), '');
  assert.equal(normalizeHost(''), '');
});

test('a non-numeric suffix is not a port; IPv6 literals keep their colons', () => {
  assert.equal(normalizeHost('host:abc'), 'host:abc');
  assert.equal(normalizeHost('[::1]:3000'), '[::1]');
  assert.equal(normalizeHost('[2001:DB8::1]'), '[2001:db8::1]');
});

test('a wildcard is keyed by everything after the first label', () => {
  assert.equal(wildcardKey('a.example.com'), 'example.com');
  assert.equal(wildcardKey('a.b.example.com'), 'b.example.com');
  assert.equal(wildcardKey('localhost'), '');
});
