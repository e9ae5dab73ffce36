import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { RESOURCE_ID_NAMESPACE, deriveId } from './ids.ts';

/** RFC 4122 §4.3 name-based UUID (version 5, SHA-1), computed without the uuid package. */
function rfc4122v5(namespace: string, name: string): string {
  const ns = Buffer.from(namespace.replace(/-/g, ''), 'hex');
  const hash = createHash('sha1').update(ns).update(Buffer.from(name, 'utf8')).digest();
  const b = hash.subarray(0, 16);
  b[6] = (b[6] & 0x0f) | 0x50;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const URL_NAMESPACE = '6ba7b811-9dad-11d1-80b4-00c04fd430c8';

test('the namespace is uuid5(URL, "https://github.com/api7/aisix#resources-file"), as in the reference', () => {
  assert.equal(RESOURCE_ID_NAMESPACE, rfc4122v5(URL_NAMESPACE, 'https://github.com/api7/aisix#resources-file'));
});

test('a derived id is uuid5(namespace, "<collection>/<identity>")', () => {
  // Pinned: computed independently with SHA-1 per RFC 4122, so ids match the reference gateway.
  assert.equal(rfc4122v5(RESOURCE_ID_NAMESPACE, 'models/fast'), '60adb101-981c-5be8-a797-cb21b84dd94d');
  assert.equal(deriveId('models', 'fast'), '60adb101-981c-5be8-a797-cb21b84dd94d');
  for (const [c, name] of [['provider_keys', 'openai-main'], ['api_keys', 'team-a'], ['passthrough_routes', 'ünïcode/*']]) {
    assert.equal(deriveId(c, name), rfc4122v5(RESOURCE_ID_NAMESPACE, `${c}/${name}`));
  }
});

test('ids differ by collection for the same name', () => {
  assert.notEqual(deriveId('models', 'x'), deriveId('api_keys', 'x'));
});
