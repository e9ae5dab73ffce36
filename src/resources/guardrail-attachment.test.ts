import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { deriveId } from './ids.ts';
import { PK, assertErrors, expectOk, loadObj } from './test-helpers.ts';

const world = {
  provider_keys: [PK],
  models: [{ display_name: 'fast', provider: 'openai', provider_key: 'pk' }],
  api_keys: [{ display_name: 'team-a', key_hash: createHash('sha256').update('a').digest('hex'), allowed_models: [] }],
  passthrough_routes: [{ name: 'files', path_prefix: '/files', target_url: 'https://x.example.com', provider_key: 'pk' }],
  guardrails: [{ name: 'g', kind: 'keyword' }, { name: 'h', kind: 'pii' }],
};
const load = (...guardrail_attachments: Record<string, unknown>[]) => loadObj({ ...world, guardrail_attachments });

test('names resolve to ids per scope_type; env gets scope_id null; team and mcp_server keep the value', () => {
  const r = expectOk(load(
    { guardrail: 'g', scope_type: 'env' },
    { guardrail: 'g', scope_type: 'model', scope: 'fast', priority: 5 },
    { guardrail: 'g', scope_type: 'api_key', scope: 'team-a', enabled: false },
    { guardrail: 'g', scope_type: 'passthrough_route', scope: 'files' },
    { guardrail: 'h', scope_type: 'team', scope: 'team-42' },
    { guardrail: 'h', scope_type: 'mcp_server', scope: 'github' },
  ));
  const gid = deriveId('guardrails', 'g');
  assert.deepEqual(r.guardrail_attachments.map(({ id: _id, ...a }) => a), [
    { guardrail_id: gid, scope_type: 'env', scope_id: null, priority: 0, enabled: true },
    { guardrail_id: gid, scope_type: 'model', scope_id: deriveId('models', 'fast'), priority: 5, enabled: true },
    { guardrail_id: gid, scope_type: 'api_key', scope_id: deriveId('api_keys', 'team-a'), priority: 0, enabled: false },
    { guardrail_id: gid, scope_type: 'passthrough_route', scope_id: deriveId('passthrough_routes', 'files'), priority: 0, enabled: true },
    { guardrail_id: deriveId('guardrails', 'h'), scope_type: 'team', scope_id: 'team-42', priority: 0, enabled: true },
    { guardrail_id: deriveId('guardrails', 'h'), scope_type: 'mcp_server', scope_id: 'github', priority: 0, enabled: true },
  ]);
});

test('identity is name, else <guardrail>/<scope_type>[/<scope>] as written', () => {
  const r = expectOk(load({ guardrail: 'g', scope_type: 'env' }, { guardrail: 'g', scope_type: 'model', scope: 'fast' }, { name: 'mine', guardrail: 'h', scope_type: 'env' }));
  assert.deepEqual(r.guardrail_attachments.map((a) => a.id), [
    deriveId('guardrail_attachments', 'g/env'),
    deriveId('guardrail_attachments', 'g/model/fast'),
    deriveId('guardrail_attachments', 'mine'),
  ]);
  assert.equal(r.guardrail_attachments[2].name, 'mine');
});

test('the same guardrail attached twice to one scope is a duplicate', () => {
  assertErrors(load({ guardrail: 'g', scope_type: 'model', scope: 'fast' }, { guardrail: 'g', scope_type: 'model', scope: 'fast', priority: 1 }), [
    'guardrail_attachments[1] ("g/model/fast").name: duplicate guardrail attachment "g/model/fast" (also guardrail_attachments[0]); names must be unique',
  ]);
});

test('unknown guardrail or scope names; scope rules per scope_type', () => {
  assertErrors(load(
    { guardrail: 'nope', scope_type: 'env' },
    { guardrail: 'g', scope_type: 'model', scope: 'slow' },
    { guardrail: 'g', scope_type: 'env', scope: 'fast' },
    { guardrail: 'g', scope_type: 'api_key' },
    { guardrail: 'g', scope_type: 'planet', scope: 'x' },
    { scope_type: 'env', name: 'lonely' },
  ), [
    'guardrail_attachments[0] ("nope/env").guardrail: unknown guardrail "nope"',
    'guardrail_attachments[1] ("g/model/slow").scope: unknown model "slow"',
    'guardrail_attachments[2] ("g/env/fast").scope: not allowed when scope_type is env',
    'guardrail_attachments[3] ("g/api_key").scope: required when scope_type is api_key',
    'guardrail_attachments[4] ("g/planet/x").scope_type: must be one of: env, model, api_key, team, passthrough_route, mcp_server',
    'guardrail_attachments[5] ("lonely").guardrail: required: the name of a guardrail (or guardrail_id)',
  ]);
});

test('explicit guardrail_id / scope_id must be derived ids from the file', () => {
  expectOk(load({ guardrail_id: deriveId('guardrails', 'g'), scope_type: 'model', scope_id: deriveId('models', 'fast') }));
  assertErrors(load({ guardrail_id: 'x', scope_type: 'model', scope_id: 'y' }), [
    'guardrail_attachments[0] ("x/model/y").guardrail_id: no guardrail in this file has id "x" (ids are derived; reference it by name instead)',
    'guardrail_attachments[0] ("x/model/y").scope_id: no model in this file has id "y" (ids are derived; reference it by name instead)',
  ]);
});
