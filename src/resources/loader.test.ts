import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadResourcesFile, loadResourcesText } from './loader.ts';
import { formatLoadErrors } from './issues.ts';
import { deriveId } from './ids.ts';
import { PK, assertError, assertErrors, expectErrors, expectOk, loadObj } from './test-helpers.ts';

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');
const HASH_A = sha256('key-a');

describe('file level', () => {
  test('a minimal file loads with empty collections', () => {
    const r = loadResourcesText('_format_version: "1"\n', {});
    assert.deepEqual(r, {
      ok: true,
      count: 0,
      resources: {
        provider_keys: [], models: [], api_keys: [], passthrough_routes: [], guardrails: [],
        guardrail_attachments: [], rate_limit_policies: [], observability_exporters: [],
      },
    });
  });

  test('null collections are empty', () => {
    const r = expectOk(loadResourcesText('_format_version: "1"\nmodels:\napi_keys: null\n', {}));
    assert.deepEqual(r.models, []);
    assert.deepEqual(r.api_keys, []);
  });

  test('_format_version is required', () => {
    assertErrors(loadResourcesText('models: []\n', {}), ['_format_version: required: add _format_version: "1" at the top of the file']);
  });

  test('an unquoted _format_version: 1 asks to quote it', () => {
    assertErrors(loadResourcesText('_format_version: 1\n', {}), [
      '_format_version: must be the string "1", not a number; quote it: _format_version: "1"',
    ]);
  });

  test('another version is rejected', () => {
    assertErrors(loadResourcesText('_format_version: "2"\n', {}), [
      '_format_version: unsupported version "2"; this gateway reads _format_version: "1"',
    ]);
  });

  test('an unknown top-level key is an error', () => {
    const errors = expectErrors(loadResourcesText('_format_version: "1"\nmcp_servers: []\n', {}));
    assertError(errors, /^mcp_servers: unknown top-level key; expected _format_version or one of: provider_keys, models/);
  });

  test('a collection must be a list, its entries mappings', () => {
    assertErrors(loadResourcesText('_format_version: "1"\nmodels: {a: 1}\napi_keys: [1, "x"]\n', {}), [
      'models: must be a list of mappings (or null)',
      'api_keys[0]: must be a mapping',
      'api_keys[1]: must be a mapping',
    ]);
  });

  test('the top level must be a mapping', () => {
    assertErrors(loadResourcesText('', {}), ['top level: must be a mapping with _format_version: "1" and the collections, got an empty document']);
    assertErrors(loadResourcesText('- a\n', {}), ['top level: must be a mapping with _format_version: "1" and the collections, got a list']);
  });

  test('YAML syntax errors are reported without the source line (it may hold a secret)', () => {
    const errors = expectErrors(loadResourcesText('_format_version: "1"\nprovider_keys:\n  - display_name: x\n    api_key: "sk-live-123\n', {}));
    assert.equal(errors.length, 1);
    assert.match(errors[0], /^yaml: .*line \d+, column \d+$/);
    assert.ok(!errors[0].includes('sk-live-123'));
  });

  test('an unquoted secret that YAML reads as an alias or a block scalar header is never quoted back', () => {
    for (const value of ['*Zq9Secret', '|Zq9Secret']) {
      const errors = expectErrors(loadResourcesText(`_format_version: "1"\nprovider_keys:\n  - display_name: x\n    api_key: ${value}\n`, {}));
      for (const e of errors) assert.ok(!e.includes('Zq9Secret'), e);
    }
  });

  test('duplicate mapping keys are a YAML error', () => {
    assertError(expectErrors(loadResourcesText('_format_version: "1"\nmodels: []\nmodels: []\n', {})), /^yaml: Map keys must be unique/);
  });

  test('only one YAML document is allowed', () => {
    assertErrors(loadResourcesText('_format_version: "1"\n---\n_format_version: "1"\n', {}), [
      'yaml: the file must hold a single YAML document, found 2',
    ]);
  });

  test('non-string keys and non-finite numbers are entry errors with their path', () => {
    const text = [
      '_format_version: "1"',
      'provider_keys:',
      '  - display_name: pk',
      '    api_key: k',
      '    request:',
      '      param_renames:',
      '        1: a',
      'models:',
      '  - display_name: m',
      '    provider: openai',
      '    provider_key: pk',
      '    timeout: .inf',
    ].join('\n');
    assertErrors(loadResourcesText(text, {}), [
      'provider_keys[0] ("pk").request.param_renames: mapping keys must be strings; found number 1 (quote it)',
      'models[0] ("m").timeout: non-finite numbers (.inf, .nan) are not allowed',
    ]);
  });

  test('anchors, aliases and merge keys are resolved', () => {
    const text = [
      '_format_version: "1"',
      'provider_keys: [{display_name: pk, api_key: k}]',
      'models:',
      '  - &base {display_name: a, provider: openai, provider_key: pk, rate_limit: {rpm: 5}}',
      '  - <<: *base',
      '    display_name: b',
    ].join('\n');
    const r = expectOk(loadResourcesText(text, {}));
    assert.deepEqual(r.models.map((m) => [m.display_name, m.rate_limit?.rpm]), [['a', 5], ['b', 5]]);
  });

  test('one anchor may be used any number of times (a shared rate_limit on 150 models)', () => {
    const lines = ['_format_version: "1"', 'provider_keys: [{display_name: pk, api_key: k}]', 'models:'];
    for (let i = 0; i < 150; i++) {
      lines.push(`  - {display_name: m${i}, provider: openai, provider_key: pk, rate_limit: ${i === 0 ? '&rl {rpm: 5}' : '*rl'}}`);
    }
    const r = expectOk(loadResourcesText(lines.join('\n'), {}));
    assert.equal(r.models.length, 150);
    assert.equal(r.models[149].rate_limit?.rpm, 5);
  });

  test('an alias bomb is refused before it is expanded', () => {
    const levels = ['a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]'];
    for (let i = 1; i < 10; i++) levels.push(`a${i}: &a${i} [${Array(9).fill(`*a${i - 1}`).join(', ')}]`);
    const merges = ['m0: &m0 {k: v}'];
    for (let i = 1; i < 40; i++) merges.push(`m${i}: &m${i} {<<: [*m${i - 1}], k${i}: [*m${i - 1}, *m${i - 1}]}`);
    for (const body of [levels, merges]) {
      assertErrors(loadResourcesText(['_format_version: "1"', ...body].join('\n'), {}), [
        'yaml: aliases expand the file to more than 1000000 values; use fewer or smaller aliased nodes',
      ]);
    }
  });

  test('an alias inside the node it names is an error with its path, not a crash', () => {
    assertErrors(loadResourcesText('_format_version: "1"\nmodels:\n  - &m\n    display_name: x\n    self: *m\n', {}), [
      'yaml: models[0].self: an alias refers to a node that contains it (the value would be infinite)',
    ]);
    assertErrors(loadResourcesText('_format_version: "1"\nx: &a {b: {<<: *a}}\n', {}), [
      'yaml: x.b: an alias refers to a node that contains it (the value would be infinite)',
    ]);
  });

  test('a tag that does not apply is an error, not silently dropped', () => {
    for (const value of ['!ENV OPENAI_KEY', '!!int abc']) {
      const errors = expectErrors(loadResourcesText(`_format_version: "1"\nprovider_keys:\n  - display_name: x\n    api_key: ${value}\n`, {}));
      assertError(errors, /^yaml: Unresolved tag at line 4, column 14: unsupported tag/);
    }
  });

  test('count is the number of resources across collections', () => {
    const r = loadObj({ provider_keys: [PK], models: [{ display_name: 'm', provider: 'openai', provider_key: 'pk' }] });
    assert.equal(r.ok && r.count, 2);
  });
});

describe('identity and ids', () => {
  test('each entry gets id = uuid5("<collection>/<identity>")', () => {
    const r = expectOk(loadObj({
      provider_keys: [PK],
      models: [{ display_name: 'fast', provider: 'openai', provider_key: 'pk' }],
      guardrails: [{ name: 'g', kind: 'keyword' }],
      passthrough_routes: [{ display_name: 'r', path_prefix: '/r', target_url: 'https://x.example.com', provider_key: 'pk' }],
    }));
    assert.equal(r.models[0].id, '60adb101-981c-5be8-a797-cb21b84dd94d');
    assert.equal(r.provider_keys[0].id, deriveId('provider_keys', 'pk'));
    assert.equal(r.guardrails[0].id, deriveId('guardrails', 'g'));
    assert.equal(r.passthrough_routes[0].id, deriveId('passthrough_routes', 'r'));
  });

  test('an id field is not allowed', () => {
    assertErrors(loadObj({ provider_keys: [{ ...PK, id: 'x' }] }), [
      'provider_keys[0] ("pk").id: not allowed in a resources file: ids are derived from the display_name',
    ]);
  });

  test('the identity is required, non-empty and a string', () => {
    assertErrors(loadObj({ provider_keys: [{ api_key: 'k' }, { display_name: '', api_key: 'k' }, { display_name: 5, api_key: 'k' }] }), [
      'provider_keys[0].display_name: required: the name of this provider key',
      'provider_keys[1].display_name: must be a non-empty string',
      'provider_keys[2].display_name: must be a non-empty string',
    ]);
    assertErrors(loadObj({ guardrails: [{ kind: 'keyword' }] }), ['guardrails[0].name: required: the name of this guardrail']);
  });

  test('identities are unique per kind', () => {
    assertErrors(loadObj({ provider_keys: [PK, PK] }), [
      'provider_keys[1] ("pk").display_name: duplicate provider key "pk" (also provider_keys[0]); names must be unique',
    ]);
    // The same name in two kinds is fine.
    expectOk(loadObj({ provider_keys: [PK], models: [{ display_name: 'pk', provider: 'openai', provider_key: 'pk' }] }));
  });

  test('a pass-through route takes exactly one of name / display_name; display_name becomes name', () => {
    const route = { path_prefix: '/r', target_url: 'https://x.example.com', provider_key: 'pk' };
    assertErrors(loadObj({ provider_keys: [PK], passthrough_routes: [{ ...route, name: 'a', display_name: 'b' }, route] }), [
      'passthrough_routes[0] ("a").display_name: give name or display_name, not both',
      'passthrough_routes[1].name: required: the name of this pass-through route (or display_name)',
    ]);
    const r = expectOk(loadObj({ provider_keys: [PK], passthrough_routes: [{ ...route, display_name: 'b' }] }));
    assert.equal(r.passthrough_routes[0].name, 'b');
    assert.ok(!('display_name' in r.passthrough_routes[0]));
  });

  test('the identity may come from ${VAR}', () => {
    const r = expectOk(loadObj({ provider_keys: [{ ...PK, display_name: 'pk-${ENV}' }] }, { ENV: 'prod' }));
    assert.equal(r.provider_keys[0].id, deriveId('provider_keys', 'pk-prod'));
  });
});

describe('${VAR} interpolation in a file', () => {
  test('string values are interpolated, partially too', () => {
    const r = expectOk(loadObj({ provider_keys: [{ ...PK, api_key: '${KEY}', api_base: 'https://${HOST}/v1' }] }, { KEY: 'sk-1', HOST: 'h.example.com' }));
    assert.equal(r.provider_keys[0].api_key, 'sk-1');
    assert.equal(r.provider_keys[0].api_base, 'https://h.example.com/v1');
  });

  test('$$ and bare $VAR', () => {
    const r = expectOk(loadObj({ provider_keys: [{ ...PK, api_key: '$$x$Y' }] }));
    assert.equal(r.provider_keys[0].api_key, '$x$Y');
  });

  test('missing, empty, unterminated and empty-brace variables are errors with their path', () => {
    assertErrors(loadObj({
      provider_keys: [
        { ...PK, display_name: 'a', api_key: '${MISSING}' },
        { ...PK, display_name: 'b', api_key: '${EMPTY}' },
        { ...PK, display_name: 'c', api_key: 'x${OPEN' },
        { ...PK, display_name: 'd', api_key: '${}' },
      ],
    }, { EMPTY: '' }), [
      'provider_keys[0] ("a").api_key: environment variable MISSING is not set',
      'provider_keys[1] ("b").api_key: environment variable EMPTY is empty',
      'provider_keys[2] ("c").api_key: unterminated "${" at character 2',
      'provider_keys[3] ("d").api_key: empty "${}"',
    ]);
  });

  test('mapping keys are not interpolated', () => {
    const r = expectOk(loadObj({ provider_keys: [{ ...PK, request: { param_renames: { '${A}': '${A}' } } }] }, { A: 'b' }));
    assert.deepEqual(r.provider_keys[0].request?.param_renames, { '${A}': 'b' });
  });

  test('an interpolated value stays a string (it cannot become a number or structure)', () => {
    assertErrors(loadObj({ provider_keys: [PK], models: [{ display_name: 'm', provider: 'openai', provider_key: 'pk', timeout: '${T}' }] }, { T: '5' }), [
      'models[0] ("m").timeout: must be an integer',
    ]);
  });
});

describe('sugar', () => {
  const direct = { display_name: 'fast', provider: 'openai' };

  test('models[].provider_key names a provider key and becomes provider_key_id', () => {
    const r = expectOk(loadObj({ provider_keys: [PK], models: [{ ...direct, provider_key: 'pk' }] }));
    const m = r.models[0];
    assert.ok('provider_key_id' in m);
    assert.equal(m.provider_key_id, deriveId('provider_keys', 'pk'));
    assert.ok(!('provider_key' in m));
  });

  test('an unknown provider key name is reported with the reference format', () => {
    assertErrors(loadObj({ provider_keys: [PK], models: [{ ...direct, provider_key: 'x' }] }), [
      'models[0] ("fast").provider_key: unknown provider key "x"',
    ]);
  });

  test('provider_key and provider_key_id are mutually exclusive; one is required', () => {
    assertErrors(loadObj({
      provider_keys: [PK],
      models: [
        { ...direct, provider_key: 'pk', provider_key_id: deriveId('provider_keys', 'pk') },
        { ...direct, display_name: 'b' },
      ],
    }), [
      'models[0] ("fast").provider_key: give provider_key or provider_key_id, not both',
      'models[1] ("b").provider_key: required: the name of a provider key (or provider_key_id)',
    ]);
  });

  test('an explicit provider_key_id must be the derived id of a provider key in the file', () => {
    const ok = expectOk(loadObj({ provider_keys: [PK], models: [{ ...direct, provider_key_id: deriveId('provider_keys', 'pk') }] }));
    assert.equal((ok.models[0] as { provider_key_id: string }).provider_key_id, deriveId('provider_keys', 'pk'));
    assertErrors(loadObj({ provider_keys: [PK], models: [{ ...direct, provider_key_id: '00000000-0000-0000-0000-000000000000' }] }), [
      'models[0] ("fast").provider_key_id: no provider key in this file has id "00000000-0000-0000-0000-000000000000" (ids are derived; reference it by name instead)',
    ]);
    // A name is not an id.
    assertErrors(loadObj({ provider_keys: [PK], models: [{ ...direct, provider_key_id: 'pk' }] }), [
      'models[0] ("fast").provider_key_id: no provider key in this file has id "pk" (ids are derived; reference it by name instead)',
    ]);
  });

  test('provider_keys[].secret is accepted as api_key', () => {
    const { api_key: _omit, ...noKey } = PK;
    const r = expectOk(loadObj({ provider_keys: [{ ...noKey, secret: 's' }] }));
    assert.equal(r.provider_keys[0].api_key, 's');
    assertErrors(loadObj({ provider_keys: [{ ...PK, secret: 's' }] }), ['provider_keys[0] ("pk").secret: give api_key or secret, not both']);
  });
});

describe('api keys and key_env', () => {
  test('key_env is hashed (lowercase hex SHA-256) and the plaintext is not kept', () => {
    const r = expectOk(loadObj({ api_keys: [{ display_name: 'a', key_env: 'KEY_A', allowed_models: [] }] }, { KEY_A: 'key-a' }));
    const k = r.api_keys[0];
    assert.equal(k.key_hash, HASH_A);
    assert.ok(!('key_env' in k));
    assert.ok(!JSON.stringify(r).includes('key-a'));
    assert.equal(k.display_name, 'a');
  });

  test('key_hash may be given directly; upper case is normalized', () => {
    const r = expectOk(loadObj({ api_keys: [{ display_name: 'a', key_hash: HASH_A.toUpperCase(), allowed_models: [] }] }));
    assert.equal(r.api_keys[0].key_hash, HASH_A);
  });

  test('exactly one of key_env / key_hash', () => {
    assertErrors(loadObj({
      api_keys: [
        { display_name: 'a', key_env: 'KEY_A', key_hash: HASH_A, allowed_models: [] },
        { display_name: 'b', allowed_models: [] },
      ],
    }, { KEY_A: 'key-a' }), [
      'api_keys[0] ("a").key_env: give key_env or key_hash, not both',
      'api_keys[1] ("b").key_env: required: the environment variable holding the key (or key_hash)',
    ]);
  });

  test('an unset or empty key_env variable is an error', () => {
    assertErrors(loadObj({
      api_keys: [
        { display_name: 'a', key_env: 'NOPE', allowed_models: [] },
        { display_name: 'b', key_env: 'EMPTY', allowed_models: [] },
        { display_name: 'c', key_env: 'not a name', allowed_models: [] },
        { display_name: 'd', key_env: 'TEMPLATE', allowed_models: [] },
      ],
    }, { EMPTY: '', TEMPLATE: '${REAL_KEY}' }), [
      'api_keys[0] ("a").key_env: environment variable NOPE is not set',
      'api_keys[1] ("b").key_env: environment variable EMPTY is empty',
      'api_keys[2] ("c").key_env: must be an environment variable name (letters, digits and _)',
      'api_keys[3] ("d").key_env: environment variable TEMPLATE holds an unexpanded "${...}" template',
    ]);
  });

  test('key_hash must be a SHA-256 hex digest; the message does not echo the value', () => {
    const errors = expectErrors(loadObj({ api_keys: [{ display_name: 'a', key_hash: 'sk-plaintext-oops', allowed_models: [] }] }));
    assert.deepEqual(errors, ['api_keys[0] ("a").key_hash: must be 64 lowercase hex characters (the SHA-256 of the key)']);
  });

  test('two API keys with the same key are an error that prints neither key nor hash', () => {
    const errors = expectErrors(loadObj({
      models: [], api_keys: [
        { display_name: 'a', key_env: 'KEY_A', allowed_models: [] },
        { display_name: 'b', key_env: 'KEY_B', allowed_models: [] },
        { display_name: 'c', key_hash: HASH_A, allowed_models: [] },
      ],
    }, { KEY_A: 'key-a', KEY_B: 'key-a' }));
    assert.deepEqual(errors, [
      'api_keys[1] ("b").key_env: same key as api_keys[0] ("a"); every API key must be unique',
      'api_keys[2] ("c").key_hash: same key as api_keys[0] ("a"); every API key must be unique',
    ]);
  });

  test('the key_env plaintext never appears in any error, even where the file echoes it', () => {
    const secret = 'sk-tollgate-PLAINTEXT-9f8e7d';
    const errors = expectErrors(loadObj({
      provider_keys: [{ display_name: 'pk', api_key: '${K}', api_base: 'not a url ${K}', bogus: '${K}' }],
      api_keys: [
        { display_name: 'a', key_env: 'K', allowed_models: ['nope'], rate_limit: { rpm: -1 }, expires_at: '${K}' },
        { display_name: 'b', key_env: 'K', allowed_models: [], allowed_routes: ['${K}x'], team_id: 5 },
        { display_name: 'c', key_hash: '${K}', allowed_models: [] },
      ],
      models: [{ display_name: '${K}*', routing: { targets: [{ model: '${K}' }] } }],
    }, { K: secret }));
    assert.ok(errors.length >= 8, errors.join('\n'));
    for (const e of errors) assert.ok(!e.includes(secret), `plaintext leaked in: ${e}`);
    // The identity built from the same variable is shown redacted.
    assertError(errors, 'models[0] ("[REDACTED]*").display_name: only direct models may be wildcards ("*"); a routing model needs a plain name');
  });

  test("a variable's value is never printed: a credential's ${VAR} in a reference field shows as ${VAR}", () => {
    const secret = 'sk-provider-SECRET-5a4b3c';
    const errors = expectErrors(loadObj({
      provider_keys: [{ display_name: 'pk', provider: 'openai', api_key: '${OPENAI_API_KEY}' }],
      models: [{ display_name: 'gpt', provider: 'openai', model_name: 'gpt-4o', provider_key: '${OPENAI_API_KEY}' }],
    }, { OPENAI_API_KEY: secret }));
    for (const e of errors) assert.ok(!e.includes(secret), `value leaked in: ${e}`);
    assertError(errors, 'models[0] ("gpt").provider_key: unknown provider key "${OPENAI_API_KEY}"');
  });

  test('a variable value is masked however a message escapes it: newline, quote, backslash, control and non-ASCII characters', () => {
    for (const secret of [
      'sk-proj-REALSECRET-0123456789\n',
      'sk-proj-"quoted"-0123456789',
      'sk-proj-back\\slash-0123456789',
      'sk-proj-ctl\u0001\t-0123456789',
      'sk-proj-ünï©ødé-0123456789\r\n',
    ]) {
      const errors = expectErrors(loadObj({
        provider_keys: [{ display_name: 'pk', provider: 'openai', api_key: '${OPENAI_API_KEY}' }],
        models: [{ display_name: 'gpt', provider: 'openai', model_name: 'gpt-4o', provider_key: '${OPENAI_API_KEY}' }],
      }, { OPENAI_API_KEY: secret }));
      const escaped = JSON.stringify(secret).slice(1, -1);
      for (const e of errors) {
        assert.ok(!e.includes(secret) && !e.includes(escaped), `value leaked in: ${e}`);
        assert.ok(!e.includes('REALSECRET') && !e.includes('0123456789'), `value leaked in: ${e}`);
      }
      assertError(errors, 'models[0] ("gpt").provider_key: unknown provider key "${OPENAI_API_KEY}"');
    }
  });

  test('a key_env plaintext is masked in its escaped spelling too', () => {
    const secret = 'sk-tollgate-"PLAIN"\\TEXT\n';
    const errors = expectErrors(loadObj({
      api_keys: [{ display_name: 'a', key_env: 'K', allowed_models: [] }],
      models: [{ display_name: 'm', provider: 'openai', model_name: 'x', provider_key: '${K}' }],
    }, { K: secret }));
    for (const e of errors) assert.ok(!e.includes('PLAIN'), `plaintext leaked in: ${e}`);
  });

  test('allowed_models is required; allowed_routes optional', () => {
    assertErrors(loadObj({ api_keys: [{ display_name: 'a', key_hash: HASH_A }] }), ['api_keys[0] ("a").allowed_models: required']);
  });

  test('api key fields: expires_at RFC 3339, disabled default false, jwt_subject needs jwt_provider', () => {
    const r = expectOk(loadObj({ api_keys: [{ display_name: 'a', key_hash: HASH_A, allowed_models: [], expires_at: '2030-01-01T00:00:00Z', team_id: 't', user_id: 'u', user_name: 'n' }] }));
    assert.equal(r.api_keys[0].disabled, false);
    assertErrors(loadObj({ api_keys: [{ display_name: 'a', key_hash: HASH_A, allowed_models: [], expires_at: '2030-01-01', jwt_subject: 's' }] }), [
      'api_keys[0] ("a").expires_at: must be an RFC 3339 date-time with a time zone (e.g. 2026-01-31T00:00:00Z)',
      'api_keys[0] ("a").jwt_subject: requires jwt_provider',
    ]);
  });

  test('(jwt_provider, jwt_subject) is unique', () => {
    const jwt = { jwt_provider: 'idp', jwt_subject: 'alice', allowed_models: [] };
    assertErrors(loadObj({ api_keys: [{ display_name: 'a', key_hash: HASH_A, ...jwt }, { display_name: 'b', key_hash: sha256('b'), ...jwt }] }), [
      'api_keys[1] ("b").jwt_subject: same jwt_provider and jwt_subject as api_keys[0] ("a")',
    ]);
  });

  test('allowed_models globs have at most one *', () => {
    assertErrors(loadObj({ api_keys: [{ display_name: 'a', key_hash: HASH_A, allowed_models: ['a*b*'] }] }), [
      'api_keys[0] ("a").allowed_models[0]: may contain at most one "*"',
    ]);
  });
});

describe('strict schema', () => {
  test('unknown keys are rejected with their full path', () => {
    assertErrors(loadObj({
      provider_keys: [{ ...PK, color: 'red', request: { param_renamez: {} }, tls: { verify: true, pin: 'x' } }],
      models: [
        { display_name: 'g', routing: { targets: [{ model: 'g2', wieght: 2 }] } },
        { display_name: 'g2', routing: { targets: [{ model: 'd' }], bogus: 1 } },
        { display_name: 'd', provider: 'openai', provider_key: 'pk' },
      ],
    }), [
      'provider_keys[0] ("pk").color: unknown field',
      'provider_keys[0] ("pk").request.param_renamez: unknown field',
      'provider_keys[0] ("pk").tls.pin: unknown field',
      'models[0] ("g").routing.targets[0].wieght: unknown field',
      'models[1] ("g2").routing.bogus: unknown field',
    ]);
  });

  test('types, enums, minimums and patterns are reported per field', () => {
    assertErrors(loadObj({
      provider_keys: [{ ...PK, adapter: 'grpc', strip_headers: 'authorization' }],
      models: [
        { display_name: 'a', provider: 'Open AI', provider_key: 'pk', rate_limit: { rpm: -1, tpm: 1.5 }, retries: 'two' },
        { display_name: 'b', routing: { targets: [], strategy: 'random' } },
      ],
    }), [
      'provider_keys[0] ("pk").adapter: must be one of: openai, anthropic, bedrock, vertex, azure-openai',
      'provider_keys[0] ("pk").strip_headers: must be a list',
      'models[0] ("a").provider: must be lowercase letters, digits, ".", "_" or "-", starting with a letter or digit',
      'models[0] ("a").rate_limit.rpm: must be >= 0',
      'models[0] ("a").rate_limit.tpm: must be an integer',
      'models[0] ("a").retries: must be an integer',
      'models[1] ("b").routing.targets: must have at least 1 item',
      'models[1] ("b").routing.strategy: must be one of: failover, round_robin, consistent_hash, least_latency, least_busy, least_cost',
    ]);
  });

  test('a nullable field names both allowed types when the type is wrong', () => {
    assertErrors(loadObj({ provider_keys: [{ ...PK, adapter: 5 }] }), [
      'provider_keys[0] ("pk").adapter: must be one of (openai, anthropic, bedrock, vertex, azure-openai) or null',
    ]);
    expectOk(loadObj({ provider_keys: [{ ...PK, adapter: null, api_base: null }] }));
  });

  test('schema defaults are filled in', () => {
    const r = expectOk(loadObj({
      provider_keys: [PK],
      models: [{ display_name: 'a', provider: 'openai', provider_key: 'pk' }, { display_name: 'g', routing: { targets: [{ model: 'a' }] } }],
    }));
    assert.deepEqual(r.provider_keys[0].strip_headers, ['authorization', 'cookie', 'set-cookie', 'x-api-key']);
    const g = r.models[1];
    assert.ok('routing' in g);
    assert.equal(g.routing.strategy, 'failover');
    assert.equal(g.routing.retry_on_429, false);
    assert.deepEqual(g.routing.targets, [{ model: 'a', weight: 1, priority: 0 }]);
  });
});

describe('cross references', () => {
  const models = [
    { display_name: 'fast', provider: 'openai', provider_key: 'pk' },
    { display_name: 'openai/*', provider: 'openai', model_name: '*', provider_key: 'pk' },
  ];
  const route = { name: 'files', path_prefix: '/files', target_url: 'https://x.example.com', provider_key: 'pk' };

  test('allowed_models entries must name a model; globs and wildcard-matched names pass', () => {
    expectOk(loadObj({ provider_keys: [PK], models, api_keys: [{ display_name: 'a', key_hash: HASH_A, allowed_models: ['fast', 'openai/gpt-4o', '*', 'x*'] }] }));
    assertErrors(loadObj({ provider_keys: [PK], models, api_keys: [{ display_name: 'a', key_hash: HASH_A, allowed_models: ['fast', 'slow', 'azure/gpt'] }] }), [
      'api_keys[0] ("a").allowed_models[1]: unknown model "slow"',
      'api_keys[0] ("a").allowed_models[2]: unknown model "azure/gpt"',
    ]);
  });

  test('allowed_routes entries must name a pass-through route unless they contain *', () => {
    expectOk(loadObj({ provider_keys: [PK], passthrough_routes: [route], api_keys: [{ display_name: 'a', key_hash: HASH_A, allowed_models: [], allowed_routes: ['files', 'other-*'] }] }));
    assertErrors(loadObj({ provider_keys: [PK], passthrough_routes: [route], api_keys: [{ display_name: 'a', key_hash: HASH_A, allowed_models: [], allowed_routes: ['filez'] }] }), [
      'api_keys[0] ("a").allowed_routes[0]: unknown pass-through route "filez"',
    ]);
  });

  test('routing targets must name a model', () => {
    assertErrors(loadObj({ provider_keys: [PK], models: [...models, { display_name: 'g', routing: { targets: [{ model: 'fast' }, { model: 'openai/o3' }, { model: 'nope' }] } }] }), [
      'models[2] ("g").routing.targets[2].model: unknown model "nope"',
    ]);
  });

  test('routing groups may nest but not form cycles', () => {
    expectOk(loadObj({ provider_keys: [PK], models: [...models, { display_name: 'g1', routing: { targets: [{ model: 'fast' }] } }, { display_name: 'g2', routing: { targets: [{ model: 'g1' }] } }] }));
    assertErrors(loadObj({
      provider_keys: [PK],
      models: [
        { display_name: 'a', routing: { targets: [{ model: 'b' }] } },
        { display_name: 'b', routing: { targets: [{ model: 'c' }] } },
        { display_name: 'c', routing: { targets: [{ model: 'a' }] } },
        { display_name: 'self', routing: { targets: [{ model: 'self' }] } },
      ],
    }), [
      'models[2] ("c").routing.targets[0].model: routing cycle: a -> b -> c -> a',
      'models[3] ("self").routing.targets[0].model: a routing model cannot target itself',
    ]);
  });

  test('rate_limit_policies[].scope_ref names an API key or model and becomes its id', () => {
    const r = expectOk(loadObj({
      provider_keys: [PK], models,
      api_keys: [{ display_name: 'team-a', key_hash: HASH_A, allowed_models: [] }],
      rate_limit_policies: [
        { name: 'p1', scope: 'api_key', scope_ref: 'team-a', window: 'day', max_tokens: 100 },
        { name: 'p2', scope: 'model', scope_ref: 'fast', window: 'minute', max_requests: 5 },
        { name: 'p3', scope: 'team', scope_ref: 'team-42', window: 'hour', max_requests: 5 },
      ],
    }));
    assert.deepEqual(r.rate_limit_policies.map((p) => 'scope_ref' in p && p.scope_ref), [
      deriveId('api_keys', 'team-a'), deriveId('models', 'fast'), 'team-42',
    ]);
    assertErrors(loadObj({ rate_limit_policies: [{ name: 'p', scope: 'api_key', scope_ref: 'ghost', window: 'day', max_tokens: 1 }] }), [
      'rate_limit_policies[0] ("p").scope_ref: unknown API key "ghost"',
    ]);
  });
});

test('all errors across stages and collections are reported together', () => {
  const errors = expectErrors(loadObj({
    provider_keys: [{ display_name: 'pk', api_key: '${MISSING}' }],
    models: [
      { display_name: 'a', provider: 'openai', provider_key: 'x' },
      { display_name: 'a', provider: 'openai', provider_key: 'pk' },
      { display_name: 'b*c*', provider: 'openai', provider_key: 'pk', typo: 1 },
    ],
    api_keys: [{ display_name: 'k', key_env: 'UNSET', allowed_models: ['zzz'] }],
    passthrough_routes: [{ name: 'r', path_prefix: '/v1/x', target_url: 'https://x.example.com', provider_key: 'pk' }],
    bogus: [],
  }));
  assert.deepEqual(errors, [
    'bogus: unknown top-level key; expected _format_version or one of: provider_keys, models, api_keys, passthrough_routes, guardrails, guardrail_attachments, rate_limit_policies, observability_exporters',
    'provider_keys[0] ("pk").api_key: environment variable MISSING is not set',
    'models[0] ("a").provider_key: unknown provider key "x"',
    'models[1] ("a").display_name: duplicate model "a" (also models[0]); names must be unique',
    'models[2] ("b*c*").typo: unknown field',
    'models[2] ("b*c*").display_name: may contain at most one "*"',
    'api_keys[0] ("k").key_env: environment variable UNSET is not set',
    'api_keys[0] ("k").allowed_models[0]: unknown model "zzz"',
    'passthrough_routes[0] ("r").path_prefix: a route without hosts cannot claim /v1, /mcp, /a2a, /admin, /livez, /readyz or /metrics',
  ]);
});

describe('files', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-resources-'));

  test('loadResourcesFile reads the file and uses the given env', () => {
    const file = join(dir, 'ok.yaml');
    writeFileSync(file, '_format_version: "1"\nprovider_keys:\n  - display_name: pk\n    api_key: ${K}\n');
    const r = loadResourcesFile(file, { K: 'v' });
    assert.ok(r.ok);
    assert.equal(r.resources.provider_keys[0].api_key, 'v');
  });

  test('loadResourcesFile defaults to process.env', () => {
    const file = join(dir, 'env.yaml');
    writeFileSync(file, '_format_version: "1"\nprovider_keys:\n  - display_name: pk\n    api_key: ${TOLLGATE_TEST_RESOURCES_KEY}\n');
    process.env.TOLLGATE_TEST_RESOURCES_KEY = 'from-process';
    try {
      const r = loadResourcesFile(file);
      assert.ok(r.ok);
      assert.equal(r.resources.provider_keys[0].api_key, 'from-process');
    } finally {
      delete process.env.TOLLGATE_TEST_RESOURCES_KEY;
    }
  });

  test('an unreadable file is a failed load with a clear error', () => {
    const r = loadResourcesFile(join(dir, 'missing.yaml'), {});
    assert.equal(r.ok, false);
    assert.match(!r.ok ? r.errors[0] : '', /^file: cannot read: ENOENT: no such file or directory/);
    assert.equal(!r.ok && r.errors.length, 1);
  });

  test('a file that is not UTF-8 is refused with the line of the first bad byte; a UTF-8 BOM is fine', () => {
    const latin1 = join(dir, 'latin1.yaml');
    writeFileSync(latin1, Buffer.concat([
      Buffer.from('_format_version: "1"\nprovider_keys:\n  - display_name: pk\n    api_key: "sk-'),
      Buffer.from([0xe9, 0xff]),
      Buffer.from('"\n'),
    ]));
    assertErrors(loadResourcesFile(latin1, {}), ['file: line 4 is not valid UTF-8 (save the file as UTF-8)']);
    const utf16 = join(dir, 'utf16.yaml');
    writeFileSync(utf16, Buffer.from('\ufeff_format_version: "1"\n', 'utf16le'));
    assertErrors(loadResourcesFile(utf16, {}), ['file: line 1 is not valid UTF-8 (save the file as UTF-8)']);
    const bom = join(dir, 'bom.yaml');
    writeFileSync(bom, '\ufeff_format_version: "1"\nprovider_keys:\n  - display_name: pk\n    api_key: sk-é\n');
    const r = expectOk(loadResourcesFile(bom, {}));
    assert.equal(r.provider_keys[0].api_key, 'sk-é');
  });

  test('a directory is a failed load with one error', () => {
    assertErrors(loadResourcesFile(dir, {}), ['file: cannot read: EISDIR: illegal operation on a directory, read']);
  });

  test('formatLoadErrors renders the header and one line per error', () => {
    assert.equal(
      formatLoadErrors('/etc/tollgate/resources.yaml', ['a: x', 'b[0] ("n").f: y']),
      'resources file /etc/tollgate/resources.yaml: 2 error(s):\n  - a: x\n  - b[0] ("n").f: y',
    );
  });

  test('the shipped example validates when its env vars are set', () => {
    const example = join(import.meta.dirname, '../../examples/resources.example.yaml');
    const r = loadResourcesFile(example, { OPENAI_API_KEY: 'sk-openai', ANTHROPIC_API_KEY: 'sk-ant', TEAM_A_KEY: 'team-a-secret' });
    const res = expectOk(r);
    assert.ok(res.provider_keys.length >= 2);
    assert.ok(res.models.some((m) => m.display_name.includes('*')));
    assert.ok(res.api_keys.length >= 1);
    const missing = expectErrors(loadResourcesFile(example, {}));
    assertError(missing, /ANTHROPIC_API_KEY is not set/);
    assertError(missing, /OPENAI_API_KEY is not set/);
    assertError(missing, /TEAM_A_KEY is not set/);
  });

  test('the complete example in docs/resources.md validates', () => {
    const doc = readFileSync(join(import.meta.dirname, '../../docs/resources.md'), 'utf8');
    const blocks = [...doc.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]);
    assert.ok(blocks.length > 0);
    const r = loadResourcesText(blocks[blocks.length - 1], { OPENAI_API_KEY: 'a', ANTHROPIC_API_KEY: 'b', TEAM_A_KEY: 'c' });
    expectOk(r);
  });
});
