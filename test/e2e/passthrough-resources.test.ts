// E2E, spec 3 §2.1: the passthrough_routes collection of a resources file as `tollgate validate`
// and boot see it: every rule reported with its path, names resolved, allowed_routes checked.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { runCli, startGateway } from '../harness/spawn.ts';
import { testConfig } from '../harness/proxy-fixture.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-pt-res-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

function file(name: string, doc: object): string {
  const p = path.join(dir, name);
  fs.writeFileSync(p, YAML.stringify(doc));
  return p;
}

const PK = { display_name: 'openai-main', provider: 'openai', api_key: 'sk-upstream-secret-value' };
const T = 'https://api.openai.com/v1';

test('a valid file: names resolve (provider_key, anonymous_key) and routes are counted', async () => {
  const p = file('good.yaml', {
    _format_version: '1',
    provider_keys: [PK],
    api_keys: [
      { display_name: 'team', key_env: 'PT_TEAM', allowed_models: [], allowed_routes: ['openai-files', 'agents-*'] },
      { display_name: 'kiosk', key_env: 'PT_KIOSK', allowed_models: [], allowed_routes: ['*'] },
    ],
    passthrough_routes: [
      { name: 'openai-files', path_prefix: '/passthrough/openai', target_url: T, provider_key: 'openai-main', timeout_ms: 60000 },
      { display_name: 'copilot', hosts: ['*.githubcopilot.com'], path_prefix: '/mcp', preserve_host: true, auth_mode: 'header_key', auth_header_name: 'x-tollgate-api-key', credential_mode: 'forward_client', identity_header: 'x-tollgate-user', forward_client_headers: ['x-github-*'] },
      { name: 'tunnel', path_prefix: '/anon-tunnel', target_url: 'http://10.0.0.5:8080', auth_mode: 'anonymous', anonymous_key: 'kiosk', source_cidrs: ['10.0.0.0/8'], credential_mode: 'forward_client' },
      { name: 'v1-on-host', hosts: ['ai-upstream.example.com'], path_prefix: '/v1', target_url: T, provider_key: 'openai-main' },
    ],
    guardrails: [{ name: 'kw', kind: 'keyword', patterns: [{ kind: 'literal', value: 'x' }] }],
    guardrail_attachments: [{ guardrail: 'kw', scope_type: 'passthrough_route', scope: 'openai-files' }],
  });
  const r = await runCli(['validate', '--resources', p], { PT_TEAM: 'sk-team-1', PT_KIOSK: 'sk-kiosk-1' });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^OK: .* loaded 9 resource\(s\)/);
});

test('every rule of §2.1 is reported with its path, and no secret is printed', async () => {
  const p = file('bad.yaml', {
    _format_version: '1',
    provider_keys: [PK],
    api_keys: [{ display_name: 'team', key_env: 'PT_TEAM', allowed_models: [], allowed_routes: ['no-such-route', 'fine-*'] }],
    passthrough_routes: [
      { name: 'no-match', target_url: T, provider_key: 'openai-main' },
      { name: 'two-targets', path_prefix: '/a', target_url: T, preserve_host: true, hosts: ['a.example.com'], provider_key: 'openai-main' },
      { name: 'no-target', path_prefix: '/b', provider_key: 'openai-main' },
      { name: 'preserve-no-hosts', path_prefix: '/c', preserve_host: true, provider_key: 'openai-main' },
      { name: 'fc-with-key', path_prefix: '/d', target_url: T, credential_mode: 'forward_client', provider_key: 'openai-main' },
      { name: 'inject-no-key', path_prefix: '/e', target_url: T },
      { name: 'unknown-key', path_prefix: '/f', target_url: T, provider_key: 'ghost' },
      { name: 'reserved', path_prefix: '/v1/files', target_url: T, provider_key: 'openai-main' },
      { name: 'bad-auth-header', path_prefix: '/g', target_url: T, auth_mode: 'header_key', auth_header_name: 'authorization', credential_mode: 'forward_client' },
      { name: 'upper-identity', path_prefix: '/h', target_url: T, provider_key: 'openai-main', identity_header: 'X-User' },
      { name: 'anon-no-cidrs', path_prefix: '/i', target_url: T, auth_mode: 'anonymous', anonymous_key: 'team', credential_mode: 'forward_client' },
      { name: 'bad-wildcard', hosts: ['*.com'], target_url: T, provider_key: 'openai-main' },
    ],
  });
  const r = await runCli(['validate', '--resources', p], { PT_TEAM: 'sk-team-secret-1' });
  assert.equal(r.code, 1);
  const expected = [
    'passthrough_routes[0] ("no-match"): needs path_prefix, hosts or both',
    'passthrough_routes[1] ("two-targets").preserve_host: exactly one of target_url or preserve_host: true (both given)',
    'passthrough_routes[2] ("no-target"): needs a target: target_url or preserve_host: true',
    'passthrough_routes[3] ("preserve-no-hosts").preserve_host: requires hosts',
    'passthrough_routes[4] ("fc-with-key").provider_key: not allowed when credential_mode is forward_client',
    'passthrough_routes[5] ("inject-no-key").provider_key: required when credential_mode is inject (the default)',
    'passthrough_routes[6] ("unknown-key").provider_key: unknown provider key "ghost"',
    'passthrough_routes[7] ("reserved").path_prefix: a route without hosts cannot claim /v1, /mcp, /a2a, /admin, /livez, /readyz or /metrics',
    'passthrough_routes[8] ("bad-auth-header").auth_header_name: cannot be a credential header (authorization, proxy-authorization, cookie, set-cookie, x-api-key)',
    'passthrough_routes[9] ("upper-identity").identity_header: must be a lowercase header name',
    'passthrough_routes[10] ("anon-no-cidrs").source_cidrs: required and non-empty when auth_mode is anonymous',
    'api_keys[0] ("team").allowed_routes[0]: unknown pass-through route "no-such-route"',
  ];
  for (const line of expected) assert.ok(r.stderr.includes(line), `missing: ${line}\n${r.stderr}`);
  assert.match(r.stderr, /passthrough_routes\[11\] \("bad-wildcard"\)\.hosts\[0\]: must be a host name/);
  assert.ok(!r.stderr.includes('fine-*'), 'wildcard grants are not checked');
  assert.ok(!r.stderr.includes('sk-upstream-secret-value') && !r.stderr.includes('sk-team-secret-1'));
});

test('boot refuses a file with a bad route', async () => {
  await assert.rejects(startGateway({
    config: testConfig(),
    resources: { _format_version: '1', provider_keys: [PK], passthrough_routes: [{ name: 'x', path_prefix: '/mcp', target_url: T, provider_key: 'openai-main' }] },
  }), /cannot claim \/v1, \/mcp/);
});
