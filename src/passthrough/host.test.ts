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

test('IPv6 literals keep their colons and brackets', () => {
  assert.equal(normalizeHost('[::1]:3000'), '[::1]');
  assert.equal(normalizeHost('[2001:DB8::1]'), '[2001:db8::1]');
  assert.equal(normalizeHost('127.0.0.1:8080'), '127.0.0.1');
});

test('a value that is not a DNS name or IP literal (with an optional numeric port) is no host', () => {
  for (const raw of [
    'a%2eb.tg.localhost', // a URL parser decodes it to a.b.tg.localhost
    'a%2Eb.tg.localhost',
    'evil@a.tg.localhost',
    'a/b.tg.localhost',
    'a\\b.tg.localhost',
    'a?.tg.localhost',
    'a#.tg.localhost',
    'a b.tg.localhost',
    'a_b.tg.localhost',
    'ä.tg.localhost',
    'a..tg.localhost',
    '.tg.localhost',
    'tg.localhost..',
    'host:abc',
    'host:80:80',
    'host:8%30',
    '[::1',
    '[::1]x',
    '[::1]:8x',
    '[fe80::1%25eth0]',
    '[not-an-ip]',
    '[1.2.3.4]',
  ]) {
    assert.equal(normalizeHost(raw), '', raw);
  }
});

test('a wildcard is keyed by everything after the first label', () => {
  assert.equal(wildcardKey('a.example.com'), 'example.com');
  assert.equal(wildcardKey('a.b.example.com'), 'b.example.com');
  assert.equal(wildcardKey('localhost'), '');
});
