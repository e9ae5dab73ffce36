import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileRoutes, type CompiledRoute, type UrlTarget } from './compile-routes.ts';
import { upstreamPath } from './target-path.ts';
import { snapshotOf } from './test-helpers.ts';

function route(extra: Record<string, unknown>): CompiledRoute {
  const routes = compileRoutes(snapshotOf({ passthrough_routes: [{ name: 'r', provider_key: 'pk', ...extra }] }));
  const all = [...routes.pathOnly.values(), ...[...routes.hostExact.values(), ...routes.hostWildcard.values()].flatMap((b) => [...b.prefixed.values(), ...(b.bare ? [b.bare] : [])])];
  return all[0];
}

function join(extra: Record<string, unknown>, path: string, query = '', prefixMatched = true): string {
  const r = route(extra);
  const out = upstreamPath(r, r.target as UrlTarget | undefined, prefixMatched, path, query);
  return typeof out === 'string' ? out : `${out.status} ${out.code}`;
}

const openai = { path_prefix: '/passthrough/openai', target_url: 'https://api.openai.com/v1' };

test('the prefix is stripped and a repeated last target segment is not duplicated', () => {
  assert.equal(join(openai, '/passthrough/openai/v1/files', 'limit=3'), '/v1/files?limit=3');
  assert.equal(join(openai, '/passthrough/openai/models'), '/v1/models');
  assert.equal(join(openai, '/passthrough/openai/v1'), '/v1');
  assert.equal(join(openai, '/passthrough/openai/v1beta/x'), '/v1/v1beta/x');
  assert.equal(join(openai, '/passthrough/openai'), '/v1');
  assert.equal(join(openai, '/passthrough/openai/files/'), '/v1/files/');
});

test('targets without a path, and with a trailing slash', () => {
  assert.equal(join({ path_prefix: '/anon-tunnel', target_url: 'http://h:8080' }, '/anon-tunnel/health'), '/health');
  assert.equal(join({ path_prefix: '/anon-tunnel', target_url: 'http://h:8080' }, '/anon-tunnel'), '/');
  assert.equal(join({ path_prefix: '/x', target_url: 'http://h/base/' }, '/x'), '/base');
  assert.equal(join({ path_prefix: '/x', target_url: 'http://h/base/' }, '/x/'), '/base');
});

test('a host route with a prefix mounts too; a host-only route keeps the full path', () => {
  assert.equal(join({ hosts: ['agent.example.com'], path_prefix: '/mcp', target_url: 'http://h' }, '/mcp/readonly'), '/readonly');
  assert.equal(join({ hosts: ['ai-upstream.example.com'], target_url: 'http://h' }, '/v1/chat/completions', '', false), '/v1/chat/completions');
  assert.equal(join({ hosts: ['ai-upstream.example.com'], target_url: 'http://h/v1' }, '/v1/chat/completions', '', false), '/v1/chat/completions');
});

test('preserve_host keeps the complete path and query', () => {
  const preserve = { hosts: ['*.githubcopilot.com'], path_prefix: '/mcp', preserve_host: true };
  assert.equal(join(preserve, '/mcp/readonly', 'a=1'), '/mcp/readonly?a=1');
});

test('the target query is kept and the caller query appended', () => {
  const azure = { path_prefix: '/azure', target_url: 'https://r.openai.azure.com/openai?api-version=2024-10-21' };
  assert.equal(join(azure, '/azure/files', 'purpose=batch'), '/openai/files?api-version=2024-10-21&purpose=batch');
  assert.equal(join(azure, '/azure/files'), '/openai/files?api-version=2024-10-21');
});

test('a caller key equal to a target key is a 400, in any spelling', () => {
  const azure = { path_prefix: '/azure', target_url: 'https://r.openai.azure.com/openai?api-version=2024-10-21' };
  for (const q of ['api-version=1', 'api%2dversion=1', 'a=1%26api-version%3D1', 'a=1%3bapi-version=1']) {
    assert.equal(join(azure, '/azure/files', q), '400 query_conflict', q);
  }
});

test('a dot segment is a 400, before anything is joined', () => {
  for (const p of ['/passthrough/openai/../secret', '/passthrough/openai/%2e%2e/x', '/passthrough/openai/v1/./files']) {
    assert.equal(join(openai, p), '400 unsafe_path', p);
  }
  assert.equal(join({ hosts: ['*.githubcopilot.com'], preserve_host: true }, '/a/../b', '', false), '400 unsafe_path');
});

test('a raw "#" anywhere in the target is a 400: joined, it would cut off the target query or end the path in ".."', () => {
  const azure = { path_prefix: '/azure', target_url: 'https://r.openai.azure.com/openai?api-version=2024-10-21' };
  assert.equal(join(azure, '/azure/files#frag'), '400 unsafe_path');
  assert.equal(join(azure, '/azure/..#'), '400 unsafe_path');
  assert.equal(join(azure, '/azure/files', 'purpose=batch#frag'), '400 unsafe_path');
  assert.equal(join({ hosts: ['*.githubcopilot.com'], preserve_host: true }, '/mcp#x', '', false), '400 unsafe_path');
  // An encoded "#" is data, not a fragment: it goes upstream as sent.
  assert.equal(join(azure, '/azure/files%23x'), '/openai/files%23x?api-version=2024-10-21');
});
