// E2E, spec 3 §1 rules 7-8 and §4.1: how the upstream URL is built (prefix stripping, no repeated
// segment, query merging), what is refused with 400 (traversal, conflicting query keys), and that
// requests, responses and redirects are relayed unchanged.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import type { Gateway } from '../harness/spawn.ts';
import { useProxyFixture } from '../harness/proxy-fixture.ts';
import { startMockUpstream, type MockUpstream } from '../harness/mock-upstream.ts';
import { echoReply, rawRequest, startByteRecorder, usageOf, type ByteRecorder } from '../harness/echo-upstream.ts';

const KEY = 'sk-e2e-pt-target';
let mock: MockUpstream;
let gw: Gateway;
let elsewhere: MockUpstream;
let bytes: ByteRecorder;

// Root-level before hooks run concurrently: the extra upstreams start inside the fixture's.
after(async () => {
  await elsewhere.close();
  await bytes.close();
});

useProxyFixture({
  resources: async (m) => {
    elsewhere = await startMockUpstream();
    bytes = await startByteRecorder();
    return resources(m);
  },
  env: { PT_KEY: KEY },
  ready: (fx) => ({ mock, gw } = fx),
});

function resources(m: string): object {
  return {
    _format_version: '1',
    provider_keys: [{ display_name: 'up', provider: 'openai', api_key: 'sk-provider-secret' }],
    api_keys: [{ display_name: 'all', key_env: 'PT_KEY', allowed_models: [], allowed_routes: ['*'] }],
    passthrough_routes: [
      { name: 'openai', path_prefix: '/passthrough/openai', target_url: `${m}/v1`, provider_key: 'up' },
      { name: 'azure', path_prefix: '/passthrough/azure', target_url: `${m}/openai?api-version=2024-10-21&tenant=acme`, provider_key: 'up' },
      { name: 'tunnel', path_prefix: '/tunnel', target_url: m, provider_key: 'up' },
      { name: 'slash', path_prefix: '/x', target_url: `${m}/base/`, provider_key: 'up' },
      { name: 'fwd', hosts: ['fwd.example.com'], target_url: `${m}/v1`, provider_key: 'up' },
      { name: 'bytes', path_prefix: '/bytes', target_url: bytes.url, provider_key: 'up' },
    ],
  };
}

const auth = { authorization: `Bearer ${KEY}` };

async function upstreamOf(path: string, headers: Record<string, string> = {}): Promise<string> {
  mock.reset();
  mock.setFallback(echoReply);
  const res = await rawRequest(gw.proxyUrl, { path, headers: { ...auth, ...headers } });
  assert.equal(res.status, 200, `${path}: ${res.text}`);
  assert.equal(mock.requests.length, 1);
  return mock.requests[0].url;
}

test('rule 7: the prefix is stripped and the target\'s last segment is not repeated', async () => {
  assert.equal(await upstreamOf('/passthrough/openai/v1/files?limit=3'), '/v1/files?limit=3');
  assert.equal(await upstreamOf('/passthrough/openai/models'), '/v1/models');
  assert.equal(await upstreamOf('/passthrough/openai/v1beta/x'), '/v1/v1beta/x');
  assert.equal(await upstreamOf('/passthrough/openai'), '/v1');
  assert.equal(await upstreamOf('/tunnel/health'), '/health');
  assert.equal(await upstreamOf('/x'), '/base');
  assert.equal(await upstreamOf('/x/'), '/base');
  assert.equal(await upstreamOf('/x/y/'), '/base/y/');
});

test('rule 7: a host-only route keeps the full path (without repeating the target segment)', async () => {
  assert.equal(await upstreamOf('/v1/chat/completions', { host: 'fwd.example.com' }), '/v1/chat/completions');
  assert.equal(await upstreamOf('/files', { host: 'fwd.example.com' }), '/v1/files');
});

test('rule 8: the target query is kept and the caller query appended as sent', async () => {
  assert.equal(await upstreamOf('/passthrough/azure/files'), '/openai/files?api-version=2024-10-21&tenant=acme');
  assert.equal(await upstreamOf('/passthrough/azure/files?purpose=batch&q=a%20b'), '/openai/files?api-version=2024-10-21&tenant=acme&purpose=batch&q=a%20b');
  assert.equal(await upstreamOf('/passthrough/openai/files?a=1&a=2&x=%2F'), '/v1/files?a=1&a=2&x=%2F');
});

async function refused(path: string, code: string): Promise<void> {
  mock.reset();
  mock.setFallback(echoReply);
  const res = await rawRequest(gw.proxyUrl, { path, headers: auth });
  assert.equal(res.status, 400, `${path}: ${res.text}`);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  const body = JSON.parse(res.text);
  assert.equal(body.error.code, code, path);
  assert.equal(body.error.type, 'invalid_request_error');
  assert.equal(typeof body.error.message, 'string');
  assert.equal(mock.requests.length, 0, `${path} reached the upstream`);
}

test('rule 8: a caller query key equal to a target key is a 400, encoded variants included', async () => {
  for (const q of [
    'api-version=2025-01-01', 'purpose=batch&tenant=evil', 'api%2Dversion=1', 'API-VERSION=1', 'api%252dversion=1',
    'x=1%26api-version%3D1', 'x=1%3Btenant%3Devil', 'x=1;tenant=evil',
  ]) {
    await refused(`/passthrough/azure/files?${q}`, 'query_conflict');
  }
});

test('rule 8: a path-traversal segment is a 400 before anything is sent', async () => {
  for (const p of [
    '/passthrough/openai/../admin', '/passthrough/openai/v1/../../secret', '/passthrough/openai/%2e%2e/secret',
    '/passthrough/openai/%2E%2E%2Fsecret', '/passthrough/openai/.%2e/x', '/passthrough/openai/%252e%252e/x', '/passthrough/openai/./files',
    '/passthrough/openai/..%5csecret',
  ]) {
    await refused(p, 'unsafe_path');
  }
});

test('rule 8: a "#" in the request target is a 400, so the target query is never cut off and ".." never hides behind it', async () => {
  for (const p of [
    '/passthrough/azure/files#frag', '/passthrough/azure/..#', '/passthrough/azure/files?purpose=batch#x',
    '/passthrough/openai/..#/secret', '/passthrough/openai/v1/files#',
  ]) {
    await refused(p, 'unsafe_path');
  }
  mock.reset();
  const res = await rawRequest(gw.proxyUrl, { path: '/files#x', headers: { ...auth, host: 'fwd.example.com' } });
  assert.equal(res.status, 400);
  assert.equal(JSON.parse(res.text).error.code, 'unsafe_path');
  assert.equal(mock.requests.length, 0);
});

test('a traversal on a host route is refused too', async () => {
  mock.reset();
  const res = await rawRequest(gw.proxyUrl, { path: '/v1/../../etc/passwd', headers: { ...auth, host: 'fwd.example.com' } });
  assert.equal(res.status, 400);
  assert.equal(JSON.parse(res.text).error.code, 'unsafe_path');
  assert.equal(mock.requests.length, 0);
});

test('rule 7: redirects are relayed, not followed, and nothing reaches the Location', async () => {
  elsewhere.reset();
  mock.script({ status: 302, headers: { location: `${elsewhere.url}/stolen?x=1` }, body: '' });
  const res = await rawRequest(gw.proxyUrl, { path: '/passthrough/openai/files/file-1/content', headers: auth });
  assert.equal(res.status, 302);
  assert.equal(res.headers.location, `${elsewhere.url}/stolen?x=1`);
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(elsewhere.requests.length, 0);
  assert.equal(mock.requests.length, 1);
  const usage = await usageOf(gw, res.headers['x-tollgate-request-id'] as string);
  assert.equal(usage.status, 302);
});

test('§4.1: any method; the body is relayed byte for byte with its content type', async () => {
  const body = Buffer.concat([
    Buffer.from('--b\r\nContent-Disposition: form-data; name="file"; filename="x.jsonl"\r\n\r\n'),
    Buffer.from(Array.from({ length: 256 }, (_, i) => i)),
    Buffer.from('\r\n--b--\r\n'),
  ]);
  for (const method of ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
    bytes.requests.length = 0;
    const res = await rawRequest(gw.proxyUrl, {
      method, path: '/bytes/files', body, headers: { ...auth, 'content-type': 'multipart/form-data; boundary=b' },
    });
    assert.equal(res.status, 200, `${method}: ${res.text}`);
    assert.equal(bytes.requests.length, 1);
    const seen = bytes.requests[0];
    assert.equal(seen.method, method);
    assert.equal(seen.url, '/files');
    assert.equal(seen.headers['content-type'], 'multipart/form-data; boundary=b');
    assert.equal(seen.headers['content-length'], String(body.length));
    assert.deepEqual(seen.body, body);
  }
});

test('§4.1: a chunked request body is relayed whole, with its length', async () => {
  bytes.requests.length = 0;
  const res = await rawRequest(gw.proxyUrl, { method: 'POST', path: '/bytes/upload', body: 'hello world', chunked: true, headers: auth });
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(bytes.requests[0].body, Buffer.from('hello world'));
  assert.equal(bytes.requests[0].headers['content-length'], '11');
  assert.equal(bytes.requests[0].headers['transfer-encoding'], undefined);
});

test('§4.1: the upstream status and body are relayed unchanged, errors included', async () => {
  for (const [status, body, type] of [
    [418, 'I am a teapot', 'text/plain'],
    [404, JSON.stringify({ error: { message: 'No such File object: file-x', type: 'invalid_request_error', code: null } }), 'application/json'],
    [503, '<html>down</html>', 'text/html'],
    [201, JSON.stringify({ id: 'batch_1' }), 'application/json'],
  ] as const) {
    mock.reset();
    mock.script({ status, body, headers: { 'content-type': type } });
    const res = await rawRequest(gw.proxyUrl, { path: '/passthrough/openai/files/file-x', headers: auth });
    assert.equal(res.status, status);
    assert.equal(res.text, body);
    assert.equal(res.headers['content-type'], type);
    assert.equal(res.headers['content-length'], String(Buffer.byteLength(body)));
    assert.equal(mock.requests.length, 1);
  }
});

test('a compressed upstream body reaches the caller still compressed, byte for byte', async () => {
  const packed = gzipSync(JSON.stringify({ data: [] }));
  mock.script({ body: packed, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } });
  const res = await rawRequest(gw.proxyUrl, { path: '/passthrough/openai/files', headers: { ...auth, 'accept-encoding': 'gzip' } });
  assert.equal(res.headers['content-encoding'], 'gzip');
  assert.deepEqual(res.body, packed);
  assert.equal(mock.requests[0].headers['accept-encoding'], 'gzip');
});

test('HEAD and bodiless answers relay their head only', async () => {
  mock.script({ status: 200, headers: { 'content-type': 'application/json', 'content-length': '1234' } });
  const res = await rawRequest(gw.proxyUrl, { method: 'HEAD', path: '/passthrough/openai/files', headers: auth });
  assert.equal(res.status, 200);
  assert.equal(res.headers['content-length'], '1234');
  assert.equal(res.body.length, 0);
  mock.script({ status: 204 });
  const empty = await rawRequest(gw.proxyUrl, { method: 'DELETE', path: '/passthrough/openai/files/f', headers: auth });
  assert.equal(empty.status, 204);
  assert.equal(empty.body.length, 0);
});
