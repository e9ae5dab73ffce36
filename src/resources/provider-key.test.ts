import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PK, assertErrors, expectErrors, expectOk, loadObj } from './test-helpers.ts';

const load = (pk: Record<string, unknown>) => loadObj({ provider_keys: [pk] });
const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';

test('every provider key field loads', () => {
  const pk = expectOk(load({
    ...PK,
    adapter: 'azure-openai',
    api_base: 'https://res.openai.azure.com',
    request: {
      param_renames: { max_tokens: 'max_completion_tokens' },
      param_constraints: { temperature_min: 0, temperature_max: 1 },
      default_headers: { 'x-team': '$${request.api_key.team_id}' },
      forward_client_headers: ['X-Trace-*'],
      default_body_fields: { store: false, metadata: { a: 1 } },
    },
    response: { content_list_to_string: true, reasoning_field: 'reasoning', stream_done_marker: 'optional', error_envelope: 'openai' },
    strip_headers: ['Authorization', 'X-Custom', 'authorization'],
    allowed_environments: ['env-1'],
    telemetry_tags: { kind: 'byo', byo_label: 'mine' },
    tls: { ca_cert: PEM },
  })).provider_keys[0];
  // strip_headers and forward_client_headers are lowercased and de-duplicated.
  assert.deepEqual(pk.strip_headers, ['authorization', 'x-custom']);
  assert.deepEqual(pk.request?.forward_client_headers, ['x-trace-*']);
  // "$${" keeps a literal "${" for the gateway's own header templates.
  assert.deepEqual(pk.request?.default_headers, { 'x-team': '${request.api_key.team_id}' });
  assert.deepEqual(pk.tls, { ca_cert: PEM, verify: true });
  assert.deepEqual(pk.telemetry_tags, { kind: 'byo', byo_label: 'mine', featured: false });
});

test('provider defaults to "" and strip_headers to the credential headers', () => {
  const { provider: _p, ...noProvider } = PK;
  const pk = expectOk(load(noProvider)).provider_keys[0];
  assert.equal(pk.provider, '');
  assert.deepEqual(pk.strip_headers, ['authorization', 'cookie', 'set-cookie', 'x-api-key']);
});

test('api_key is required and non-empty', () => {
  const { api_key: _k, ...noKey } = PK;
  assertErrors(load(noKey), ['provider_keys[0] ("pk").api_key: required']);
  assertErrors(load({ ...PK, api_key: '' }), ['provider_keys[0] ("pk").api_key: must not be empty']);
});

test('an api_key with a line break or another control character is refused at load, without the value in the error', () => {
  const secret = 'sk-live-7f3a';
  for (const bad of [`${secret}\r\nx-evil: 1`, `${secret}\n`, `${secret}\0`, `${secret}\x1b`, `\t${secret}`, `${secret}\x7f`]) {
    const errors = expectErrors(loadObj({ provider_keys: [{ ...PK, display_name: 'oa', api_key: '${UP_KEY}' }] }, { UP_KEY: bad }));
    assert.deepEqual(errors, ['provider_keys[0] ("oa").api_key: must not contain control characters'], JSON.stringify(bad));
    assert.ok(!errors.join('\n').includes(secret), 'the credential is not printed');
  }
  // Written in the file itself rather than through ${VAR}.
  assertErrors(load({ ...PK, api_key: 'sk-a\nsk-b' }), ['provider_keys[0] ("pk").api_key: must not contain control characters']);
  // Printable text outside ASCII is not a control character.
  expectOk(load({ ...PK, api_key: 'sk-ünïcode' }));
  // Beyond U+00FF no header can carry it (a pasted ellipsis): refused, not a 502 on every request.
  assertErrors(load({ ...PK, api_key: 'sk-abc\u2026def' }), ['provider_keys[0] ("pk").api_key: must not contain characters above U+00FF (no header can carry them)']);
});

test('a multi-line JSON credential of a family that parses one (vertex, bedrock, azure-openai) loads; an unparsable one does not', () => {
  const json = '{\n  "project": "p",\n  "region": "us-central1",\n  "access_token": "ya29.x"\n}\n';
  expectOk(load({ ...PK, provider: 'vertex', api_key: json }));
  expectOk(load({ ...PK, provider: 'x', adapter: 'bedrock', api_key: json }));
  expectOk(load({ ...PK, provider: 'azure', adapter: 'azure-openai', api_key: json }));
  assertErrors(load({ ...PK, provider: 'vertex', api_key: '{\n"a": "b\tc"}' }), ['provider_keys[0] ("pk").api_key: must not contain control characters']);
  assertErrors(load({ ...PK, provider: 'openai', api_key: json }), ['provider_keys[0] ("pk").api_key: must not contain control characters']);
});

test('provider key field rules', () => {
  assertErrors(load({
    ...PK,
    provider: 'OpenAI',
    api_base: 'not a url',
    request: { param_constraints: { temperature_min: 2, temperature_max: 1 }, param_renames: { a: 'a' }, forward_client_headers: ['a*b*'] },
    strip_headers: ['bad header'],
    tls: { ca_cert: 'abc', verify: 'no' },
    response: { stream_done_marker: 'always' },
  }), [
    'provider_keys[0] ("pk").provider: must be lowercase letters, digits, ".", "_" or "-", starting with a letter or digit',
    'provider_keys[0] ("pk").request.forward_client_headers[0]: must be a header name or a glob with one "*"',
    'provider_keys[0] ("pk").response.stream_done_marker: must be one of: required, optional, none',
    'provider_keys[0] ("pk").strip_headers[0]: must be a header name',
    'provider_keys[0] ("pk").tls.verify: must be a boolean (true or false)',
    'provider_keys[0] ("pk").api_base: must be an absolute http(s) URL',
    'provider_keys[0] ("pk").tls.ca_cert: must be an inline PEM certificate bundle (-----BEGIN CERTIFICATE-----)',
    'provider_keys[0] ("pk").request.param_constraints: temperature_min must not exceed temperature_max',
    'provider_keys[0] ("pk").request.param_renames.a: renames a parameter to itself',
  ]);
});

test('an azure-openai api_base may not carry a query', () => {
  assertErrors(load({ ...PK, adapter: 'azure-openai', api_base: 'https://r.openai.azure.com/?api-version=1' }), [
    'provider_keys[0] ("pk").api_base: must not carry a query for azure-openai (the api-version is added by the gateway)',
  ]);
});

test('a default header that could never be sent is a load error naming it', () => {
  assertErrors(load({
    ...PK,
    request: {
      default_headers: {
        Authorization: 'Bearer other',
        'Transfer-Encoding': 'chunked',
        'x-tollgate-team': 'a',
        'bad header': 'v',
        'X-Team': 'a',
        'x-team': 'b',
        'x-user': '$${request.user}',
        'x-open': '$${model.name',
        'x-split': 'a\r\nx-injected: 1',
        'x-fine': 'team-$${request.api_key.team_id}',
      },
    },
  }), [
    'provider_keys[0] ("pk").request.default_headers.Authorization: is a credential header: the gateway sends the key\'s own credential, never a configured one',
    'provider_keys[0] ("pk").request.default_headers["Transfer-Encoding"]: is a hop-by-hop or framing header, which the gateway sets itself',
    'provider_keys[0] ("pk").request.default_headers["bad header"]: is not a valid header name',
    'provider_keys[0] ("pk").request.default_headers["x-open"]: has an unclosed "${"',
    'provider_keys[0] ("pk").request.default_headers["x-split"]: must not contain a line break or NUL',
    'provider_keys[0] ("pk").request.default_headers["x-team"]: names the same header as another entry (x-team)',
    'provider_keys[0] ("pk").request.default_headers["x-tollgate-team"]: is in the x-tollgate-* namespace, which is never sent upstream',
    'provider_keys[0] ("pk").request.default_headers["x-user"]: names an unknown template variable "${request.user}" (known: request.id, request.api_key.id, request.api_key.name, request.api_key.team_id, request.api_key.user_id, model.id, model.name, provider_key.id, provider_key.name)',
  ]);
});
