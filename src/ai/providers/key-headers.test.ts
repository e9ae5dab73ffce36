import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addKeyHeaders, compileKeyHeaders } from './key-headers.ts';
import type { HeaderVars } from '../../lib/default-headers.ts';

const vars: HeaderVars = (name) => ({
  'request.id': 'req-1',
  'request.api_key.id': 'ak-1',
  'request.api_key.name': 'caller',
  'request.api_key.team_id': 'team-7',
  'request.api_key.user_id': undefined,
  'model.id': 'm-1',
  'model.name': 'fast',
  'provider_key.id': 'pk-1',
  'provider_key.name': 'up',
} as Record<string, string | undefined>)[name];

function headersFor(request: Parameters<typeof compileKeyHeaders>[0], raw: string[], gatewayKey?: string, gateway: Record<string, string> = {}): Record<string, unknown> {
  const rules = compileKeyHeaders(request);
  assert.ok(rules);
  const out: Record<string, string | string[] | number> = { authorization: 'Bearer sk-provider', 'content-type': 'application/json', ...gateway };
  addKeyHeaders(out, rules, raw, vars, gatewayKey);
  return out;
}

test('a key without header options compiles to nothing', () => {
  assert.equal(compileKeyHeaders(undefined), undefined);
  assert.equal(compileKeyHeaders({ default_headers: {}, forward_client_headers: [] }), undefined);
});

test('default headers are added, templates rendered, and a template without a value drops its header', () => {
  const out = headersFor({
    default_headers: {
      'X-Org': 'acme',
      'x-tenant': '${request.api_key.team_id}',
      'x-who': 'k=${request.api_key.name}/${model.name}@${provider_key.name} (${request.id})',
      'x-user': '${request.api_key.user_id}',
      'x-typo': '${request.api_key.secret}',
      'x-open': '${request.id',
    },
  }, []);
  assert.equal(out['x-org'], 'acme');
  assert.equal(out['x-tenant'], 'team-7');
  assert.equal(out['x-who'], 'k=caller/fast@up (req-1)');
  for (const h of ['x-user', 'x-typo', 'x-open']) assert.equal(out[h], undefined, h);
});

test('default headers never set a credential or replace a header the gateway set', () => {
  const out = headersFor({ default_headers: { authorization: 'Bearer attacker', 'api-key': 'k', 'content-type': 'text/plain', 'transfer-encoding': 'chunked', 'x-tollgate-request-id': 'x' } }, []);
  assert.deepEqual(out, { authorization: 'Bearer sk-provider', 'content-type': 'application/json' });
});

test('forwarded caller headers: exact names and globs, case-insensitive, repeats kept', () => {
  const out = headersFor({ forward_client_headers: ['x-trace-*', 'anthropic-beta'] }, [
    'X-Trace-Id', 'tr-1', 'x-trace-span', 's-1', 'x-trace-span', 's-2', 'Anthropic-Beta', 'b1', 'x-tenant', 'not-listed',
  ]);
  assert.equal(out['x-trace-id'], 'tr-1');
  assert.deepEqual(out['x-trace-span'], ['s-1', 's-2']);
  assert.equal(out['anthropic-beta'], 'b1');
  assert.equal(out['x-tenant'], undefined);
});

test('forwarding never relays credentials, hop-by-hop, body-shape, gateway or SDK headers, even under "*"', () => {
  const raw = [
    'authorization', 'Bearer sk-gateway-caller', 'x-api-key', 'sk-gateway-caller', 'api-key', 'k', 'x-goog-api-key', 'k',
    'proxy-authorization', 'Basic x', 'cookie', 'a=b', 'host', 'gw', 'connection', 'keep-alive, x-hop', 'x-hop', '1',
    'content-length', '12', 'content-type', 'text/plain', 'accept', '*/*', 'accept-encoding', 'gzip', 'transfer-encoding', 'chunked',
    'x-tollgate-request-id', 'spoof', 'x-stainless-lang', 'js', 'traceparent', '00-abc', 'x-keep', 'yes',
  ];
  const out = headersFor({ forward_client_headers: ['*'] }, raw);
  assert.deepEqual(out, { authorization: 'Bearer sk-provider', 'content-type': 'application/json', 'x-keep': 'yes' });
  // Even an exact entry cannot relay a credential header.
  const exact = headersFor({ forward_client_headers: ['authorization', 'x-api-key', 'cookie', 'traceparent'] }, raw);
  assert.deepEqual(exact, { authorization: 'Bearer sk-provider', 'content-type': 'application/json', traceparent: '00-abc' });
});

test("a caller header carrying the caller's gateway key is never relayed, whatever its name", () => {
  const out = headersFor({ forward_client_headers: ['x-*'] }, ['x-auth', 'Bearer sk-gateway-caller', 'x-other', 'fine'], 'sk-gateway-caller');
  assert.equal(out['x-auth'], undefined);
  assert.equal(out['x-other'], 'fine');
});

test('precedence: gateway > default header > caller header', () => {
  const out = headersFor({ default_headers: { 'x-tenant': 'operator' }, forward_client_headers: ['x-tenant', 'x-pinned'] },
    ['x-tenant', 'caller-claimed', 'x-pinned', 'caller'], undefined, { 'x-pinned': 'gateway' });
  assert.equal(out['x-tenant'], 'operator');
  assert.equal(out['x-pinned'], 'gateway');
});
