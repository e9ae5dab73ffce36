// E2E, spec 3 §2.1 preserve_host: the target is https://<matched host> (port 443) with the complete
// path kept, and the provider key's TLS settings apply. The upstream is an https echo for
// `localhost` on 127.0.0.1:443, so this file needs permission to bind port 443.
import { test, before, after, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { Gateway } from '../harness/spawn.ts';
import { useProxyFixture } from '../harness/proxy-fixture.ts';
import { LOCALHOST_CERT, rawRequest, startTlsEcho, usageOf, type TlsEcho } from '../harness/echo-upstream.ts';

const KEY = 'sk-pt-preserve';
let gw: Gateway;
let echo: TlsEcho | undefined;
let unavailable: string | undefined;

before(async () => {
  try {
    echo = await startTlsEcho(443);
  } catch (err) {
    const code = (err as { code?: string }).code;
    // Not a skip: CI runs as root on its own machine, so this is an environment fault to fix.
    unavailable = `cannot bind 127.0.0.1:443 (${code ?? String(err)}); preserve_host targets port 443`;
  }
});
after(() => echo?.close());

useProxyFixture({
  resources: (m) => ({
    _format_version: '1',
    provider_keys: [
      { display_name: 'trusting', provider: 'openai', api_key: 'sk-provider-tls', tls: { ca_cert: LOCALHOST_CERT } },
      { display_name: 'default-trust', provider: 'openai', api_key: 'sk-provider-default' },
    ],
    api_keys: [{ display_name: 'caller', key_env: 'PT_KEY', allowed_models: [], allowed_routes: ['*'] }],
    passthrough_routes: [
      { name: 'trusted', hosts: ['localhost'], path_prefix: '/mcp', preserve_host: true, provider_key: 'trusting' },
      { name: 'untrusted', hosts: ['localhost'], path_prefix: '/untrusted', preserve_host: true, provider_key: 'default-trust' },
      { name: 'wild', hosts: ['*.tg.localhost'], preserve_host: true, provider_key: 'trusting' },
      { name: 'unused', path_prefix: '/unused', target_url: m, provider_key: 'trusting' },
    ],
  }),
  env: { PT_KEY: KEY },
  ready: (fx) => ({ gw } = fx),
});

function ready(_t: TestContext): boolean {
  assert.equal(unavailable, undefined, unavailable);
  return true;
}

test('the target is https://<matched host>; the complete path and query are kept', async (t) => {
  if (!ready(t)) return;
  echo!.requests.length = 0;
  const res = await rawRequest(gw.proxyUrl, { path: '/mcp/readonly?cursor=2', headers: { host: `localhost:${new URL(gw.proxyUrl).port}`, authorization: `Bearer ${KEY}` } });
  assert.equal(res.status, 200, res.text);
  assert.equal(echo!.requests.length, 1);
  assert.equal(echo!.requests[0].url, '/mcp/readonly?cursor=2');
  assert.equal(echo!.requests[0].headers.host, 'localhost');
  assert.equal(echo!.requests[0].headers.authorization, 'Bearer sk-provider-tls');
});

test('forward-proxy form: the absolute target names the host', async (t) => {
  if (!ready(t)) return;
  echo!.requests.length = 0;
  const res = await rawRequest(gw.proxyUrl, { path: 'http://localhost/mcp/tools', headers: { authorization: `Bearer ${KEY}` } });
  assert.equal(res.status, 200, res.text);
  assert.equal(echo!.requests[0].url, '/mcp/tools');
});

test('the provider key\'s TLS trust applies: without it the self-signed upstream is refused (502)', async (t) => {
  if (!ready(t)) return;
  echo!.requests.length = 0;
  const res = await rawRequest(gw.proxyUrl, { path: '/untrusted/x', headers: { host: 'localhost', authorization: `Bearer ${KEY}` } });
  assert.equal(res.status, 502);
  assert.equal(JSON.parse(res.text).error.code, 'upstream_transport');
  assert.equal(echo!.requests.length, 0);
  assert.equal((await usageOf(gw, res.headers['x-tollgate-request-id'] as string)).status, 502);
});

test('a wildcard preserve_host route never sends its key to a host the Host only spells as one label', async (t) => {
  if (!ready(t)) return;
  echo!.requests.length = 0;
  // An upstream URL parser would decode %2e and connect to a.b.tg.localhost, two labels deep.
  for (const host of ['a.b.tg.localhost', 'a%2eb.tg.localhost', 'a%2Eb.tg.localhost', 'x@a.tg.localhost']) {
    const res = await rawRequest(gw.proxyUrl, { path: '/x', headers: { host, authorization: `Bearer ${KEY}` } });
    assert.equal(res.status, 404, `${host}: ${res.text}`);
    assert.equal(res.body.length, 0, host);
  }
  const absolute = await rawRequest(gw.proxyUrl, { path: 'http://a%2eb.tg.localhost/x', headers: { authorization: `Bearer ${KEY}` } });
  assert.equal(absolute.status, 404, absolute.text);
  assert.equal(echo!.requests.length, 0);
});
