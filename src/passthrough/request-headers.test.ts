import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RequestHeaderPolicy, upstreamRequestHeaders, type HeaderPolicyInput } from './request-headers.ts';
import { carriesKey } from '../lib/header-rules.ts';

const base: HeaderPolicyInput = {
  authMode: 'gateway_key',
  authHeader: undefined,
  identityHeader: undefined,
  credentialMode: 'inject',
  providerStripHeaders: ['authorization', 'cookie', 'set-cookie', 'x-api-key'],
  forwardClientHeaders: [],
  inject: [['authorization', 'Bearer sk-provider']],
};

function relay(input: Partial<HeaderPolicyInput>, raw: string[]): Record<string, unknown> {
  return upstreamRequestHeaders(new RequestHeaderPolicy({ ...base, ...input }), raw, 'rid-1') as Record<string, unknown>;
}

test('always stripped: host, content-length, hop-by-hop, transport and x-tollgate-*; even when named', () => {
  const named = ['host', 'content-length', 'connection', 'keep-alive', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'proxy-connection', 'x-tollgate-user', 'x-tollgate-*'];
  const out = relay({ forwardClientHeaders: named }, [
    'Host', 'gw', 'Content-Length', '3', 'Connection', 'keep-alive, X-Hop', 'Keep-Alive', 'timeout=5', 'TE', 'trailers',
    'Trailer', 'x', 'Transfer-Encoding', 'chunked', 'Upgrade', 'h2c', 'Proxy-Connection', 'x', 'Expect', '100-continue',
    'X-Tollgate-User', 'u', 'X-Tollgate-Request-Id', 'caller-id', 'X-Hop', 'gone', 'X-Keep', 'kept',
  ]);
  assert.deepEqual(out, { authorization: 'Bearer sk-provider', 'x-keep': 'kept', 'x-tollgate-request-id': 'rid-1' });
});

test('inject: inbound credentials, the provider strip_headers, proxy-authorization and trace headers go; the key is injected', () => {
  const out = relay({ providerStripHeaders: ['cookie', 'x-secret'] }, [
    'Authorization', 'Bearer sk-gateway', 'X-Api-Key', 'sk-gateway', 'Cookie', 'a=1', 'X-Secret', 's',
    'Proxy-Authorization', 'Basic x', 'traceparent', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', 'tracestate', 'a=b',
    'X-Trace', 't', 'User-Agent', 'ua',
  ]);
  assert.deepEqual(out, { 'x-trace': 't', 'user-agent': 'ua', authorization: 'Bearer sk-provider', 'x-tollgate-request-id': 'rid-1' });
});

test('transport headers are stripped by default and relayed when named', () => {
  assert.equal(relay({}, ['Expect', '100-continue'])['expect'], undefined);
  assert.equal(relay({ forwardClientHeaders: ['expect'] }, ['Expect', '100-continue'])['expect'], '100-continue');
});

test('inject strips authorization and x-api-key even when strip_headers is empty', () => {
  const out = relay({ providerStripHeaders: [] }, ['Authorization', 'Bearer sk-gateway', 'x-api-key', 'k', 'Cookie', 'c=1']);
  assert.deepEqual(out, { cookie: 'c=1', authorization: 'Bearer sk-provider', 'x-tollgate-request-id': 'rid-1' });
});

test('messages family: x-api-key and the version header are injected, replacing the caller version', () => {
  const inject: Array<[string, string]> = [['x-api-key', 'sk-ant'], ['anthropic-version', '2023-06-01']];
  assert.deepEqual(relay({ inject }, ['x-api-key', 'sk-gateway']), {
    'x-api-key': 'sk-ant', 'anthropic-version': '2023-06-01', 'x-tollgate-request-id': 'rid-1',
  });
  assert.deepEqual(relay({ inject }, ['x-api-key', 'sk-gateway', 'anthropic-version', '2024-01-01', 'anthropic-beta', 'files-api-2025-04-14']), {
    'anthropic-beta': 'files-api-2025-04-14', 'x-api-key': 'sk-ant', 'anthropic-version': '2023-06-01', 'x-tollgate-request-id': 'rid-1',
  });
  // Named in forward_client_headers (a glob suffices: it is not a credential), the caller's wins.
  assert.equal(relay({ inject, forwardClientHeaders: ['anthropic-*'] }, ['anthropic-version', '2024-01-01'])['anthropic-version'], '2024-01-01');
});

test('forward_client with gateway_key removes authorization and x-api-key, keeps cookies', () => {
  const out = relay({ credentialMode: 'forward_client', inject: [], providerStripHeaders: [] }, [
    'Authorization', 'Bearer sk-gateway', 'x-api-key', 'sk-gateway', 'Cookie', 'c=1',
  ]);
  assert.deepEqual(out, { cookie: 'c=1', 'x-tollgate-request-id': 'rid-1' });
});

test('forward_client with header_key relays the caller Authorization and strips the gateway header', () => {
  const out = relay({ credentialMode: 'forward_client', authMode: 'header_key', authHeader: 'x-gw-key', inject: [], providerStripHeaders: [] }, [
    'Authorization', 'Bearer employee-token', 'X-Gw-Key', 'sk-gateway', 'x-api-key', 'vendor',
  ]);
  assert.deepEqual(out, { authorization: 'Bearer employee-token', 'x-api-key': 'vendor', 'x-tollgate-request-id': 'rid-1' });
});

test('forward_client with anonymous strips nothing extra', () => {
  const out = relay({ credentialMode: 'forward_client', authMode: 'anonymous', inject: [], providerStripHeaders: [] }, [
    'Authorization', 'Bearer own', 'x-api-key', 'own',
  ]);
  assert.deepEqual(out, { authorization: 'Bearer own', 'x-api-key': 'own', 'x-tollgate-request-id': 'rid-1' });
});

test('identity_header is stripped unless named in full', () => {
  const raw = ['X-User', 'employee-42'];
  assert.deepEqual(relay({ identityHeader: 'x-user' }, raw), { authorization: 'Bearer sk-provider', 'x-tollgate-request-id': 'rid-1' });
  assert.deepEqual(relay({ identityHeader: 'x-user', forwardClientHeaders: ['x-*'] }, raw), { authorization: 'Bearer sk-provider', 'x-tollgate-request-id': 'rid-1' });
  assert.equal(relay({ identityHeader: 'x-user', forwardClientHeaders: ['x-user'] }, raw)['x-user'], 'employee-42');
});

test('auth_header_name is stripped unless named in full', () => {
  const input = { credentialMode: 'forward_client' as const, authMode: 'header_key' as const, authHeader: 'x-gw-key', inject: [], providerStripHeaders: [] };
  assert.equal(relay({ ...input, forwardClientHeaders: ['x-gw-*'] }, ['x-gw-key', 'k'])['x-gw-key'], undefined);
  assert.equal(relay({ ...input, forwardClientHeaders: ['X-GW-KEY'] }, ['x-gw-key', 'k'])['x-gw-key'], 'k');
});

test('credential and trace headers need exact names; globs do not reach them', () => {
  const raw = ['Authorization', 'Bearer own', 'Cookie', 'c=1', 'x-api-key', 'k', 'traceparent', 'tp', 'tracestate', 'ts', 'proxy-authorization', 'p'];
  const globbed = relay({ forwardClientHeaders: ['*', 'auth*', 'trace*', 'cook*', 'x-api-*', 'proxy-*'] }, raw);
  assert.deepEqual(globbed, { authorization: 'Bearer sk-provider', 'x-tollgate-request-id': 'rid-1' });
  const exact = relay({ forwardClientHeaders: ['cookie', 'traceparent', 'tracestate', 'proxy-authorization', 'x-api-key'] }, raw);
  assert.deepEqual(exact, {
    cookie: 'c=1', 'x-api-key': 'k', traceparent: 'tp', tracestate: 'ts', 'proxy-authorization': 'p',
    authorization: 'Bearer sk-provider', 'x-tollgate-request-id': 'rid-1',
  });
});

test('naming authorization relays the caller credential in place of the injected one', () => {
  assert.deepEqual(relay({ forwardClientHeaders: ['authorization'] }, ['Authorization', 'Bearer own']), {
    authorization: 'Bearer own', 'x-tollgate-request-id': 'rid-1',
  });
  // Without a caller header of that name the key is still injected.
  assert.equal(relay({ forwardClientHeaders: ['authorization'] }, [])['authorization'], 'Bearer sk-provider');
});

test('a header carrying the gateway key is never relayed, in whichever header and scheme it came', () => {
  const named = { forwardClientHeaders: ['authorization', 'x-api-key', 'x-other'] };
  const raw = ['Authorization', 'Bearer sk-gw', 'X-Api-Key', 'sk-gw', 'X-Other', 'Basic  sk-gw', 'X-Kept', 'not-sk-gw'];
  const out = upstreamRequestHeaders(new RequestHeaderPolicy({ ...base, ...named }), raw, 'rid-1', 'sk-gw');
  assert.deepEqual(out, { 'x-kept': 'not-sk-gw', authorization: 'Bearer sk-provider', 'x-tollgate-request-id': 'rid-1' });
  // The caller's own credential beside it is relayed as the route says.
  const own = upstreamRequestHeaders(new RequestHeaderPolicy({ ...base, ...named }), ['Authorization', 'Bearer own', 'X-Api-Key', 'sk-gw'], 'rid-1', 'sk-gw');
  assert.deepEqual(own, { authorization: 'Bearer own', 'x-tollgate-request-id': 'rid-1' });
});

test('carriesKey: the key bare or after a scheme, nothing that merely ends with it', () => {
  assert.equal(carriesKey('sk-gw', 'sk-gw'), true);
  assert.equal(carriesKey(' Bearer sk-gw ', 'sk-gw'), true);
  assert.equal(carriesKey('Basic\tsk-gw', 'sk-gw'), true);
  assert.equal(carriesKey('xsk-gw', 'sk-gw'), false);
  assert.equal(carriesKey('sk-gw2', 'sk-gw'), false);
});

test('other stripped headers (provider strip_headers entries) are relayed by a glob, case-insensitively', () => {
  const input = { providerStripHeaders: ['x-org-secret', 'x-org-tenant'], forwardClientHeaders: ['X-ORG-*'] };
  const out = relay(input, ['X-Org-Secret', 's', 'x-org-tenant', 't']);
  assert.equal(out['x-org-secret'], 's');
  assert.equal(out['x-org-tenant'], 't');
});

test('repeated headers keep every value; the caller cannot set the request id', () => {
  const out = relay({}, ['X-Multi', 'a', 'x-multi', 'b', 'X-Tollgate-Request-Id', 'spoof']);
  assert.deepEqual(out['x-multi'], ['a', 'b']);
  assert.equal(out['x-tollgate-request-id'], 'rid-1');
});
