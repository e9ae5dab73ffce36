import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileRoutes } from './compile-routes.ts';
import { matchHostStage, matchPathStage } from './match-route.ts';
import { snapshotOf } from './test-helpers.ts';
import { deriveId } from '../resources/ids.ts';

const idOf = (name: string) => deriveId('passthrough_routes', name);

const T = 'https://up.example.com';
const r = (name: string, extra: Record<string, unknown>) => ({ name, target_url: T, provider_key: 'pk', ...extra });

const routes = compileRoutes(snapshotOf({
  passthrough_routes: [
    r('files', { path_prefix: '/passthrough/openai' }),
    r('files-batches', { path_prefix: '/passthrough/openai/batches' }),
    r('root-claim', { path_prefix: '/claimed' }),
    r('host-only', { hosts: ['ai-upstream.example.com'] }),
    r('host-mcp', { hosts: ['agent.example.com'], path_prefix: '/mcp' }),
    r('host-bare', { hosts: ['agent.example.com'] }),
    r('wild', { hosts: ['*.githubcopilot.com'], path_prefix: '/mcp' }),
    r('wild-bare', { hosts: ['*.githubcopilot.com'] }),
    r('exact-over-wild', { hosts: ['api.githubcopilot.com'], path_prefix: '/mcp' }),
    r('off', { path_prefix: '/disabled', enabled: false }),
    r('off-host', { hosts: ['off.example.com'], enabled: false }),
    r('b-tie', { path_prefix: '/tie' }),
    r('a-tie', { path_prefix: '/tie' }),
  ],
}));

const path = (p: string) => matchPathStage(routes, '', p)?.route.name;
const host = (h: string, p: string) => matchHostStage(routes, h, p)?.route.name;

test('path prefixes match on segment boundaries; the longest wins', () => {
  assert.equal(path('/passthrough/openai'), 'files');
  assert.equal(path('/passthrough/openai/'), 'files');
  assert.equal(path('/passthrough/openai/v1/files'), 'files');
  assert.equal(path('/passthrough/openaix'), undefined);
  assert.equal(path('/passthrough/openai/batches/b1'), 'files-batches');
  assert.equal(path('/passthrough/openai/batchesx'), 'files');
  assert.equal(path('/passthrough/other'), undefined);
});

test('host routes are not part of the path stage; path-only routes not of the host stage', () => {
  assert.equal(path('/mcp/x'), undefined);
  assert.equal(host('unknown.example.com', '/passthrough/openai/x'), undefined);
});

test('a disabled route matches nothing', () => {
  assert.equal(path('/disabled/x'), undefined);
  assert.equal(host('off.example.com', '/x'), undefined);
});

test('host matching: exact names, and the prefix must match too when the route has one', () => {
  assert.equal(host('ai-upstream.example.com', '/v1/chat/completions'), 'host-only');
  assert.equal(host('agent.example.com', '/mcp/readonly'), 'host-mcp');
  assert.equal(host('agent.example.com', '/mcpx'), 'host-bare');
  assert.equal(host('agent.example.com', '/other'), 'host-bare');
  assert.equal(host('', '/x'), undefined);
});

test('a *. wildcard matches exactly one extra label', () => {
  assert.equal(host('proxy.githubcopilot.com', '/mcp/readonly'), 'wild');
  assert.equal(host('proxy.githubcopilot.com', '/v1/x'), 'wild-bare');
  assert.equal(host('githubcopilot.com', '/mcp/x'), undefined);
  assert.equal(host('a.b.githubcopilot.com', '/mcp/x'), undefined);
  assert.equal(host('.githubcopilot.com', '/mcp/x'), undefined);
});

test('an exact host beats a wildcard at the same prefix length', () => {
  assert.equal(host('api.githubcopilot.com', '/mcp/x'), 'exact-over-wild');
  // The exact host has no bare route: a wildcard host-only route still serves other paths.
  assert.equal(host('api.githubcopilot.com', '/other'), 'wild-bare');
});

test('equal claims resolve to the smallest id, whatever the file order', () => {
  const smallest = [idOf('a-tie'), idOf('b-tie')].sort()[0];
  const reversed = compileRoutes(snapshotOf({
    passthrough_routes: [r('a-tie', { path_prefix: '/tie' }), r('b-tie', { path_prefix: '/tie' })],
  }));
  assert.equal(routes.pathOnly.get('/tie')!.id, smallest);
  assert.equal(reversed.pathOnly.get('/tie')!.id, smallest);
});

test('a "/" prefix on a host route claims every path of that host (a path-only route may not claim "/")', () => {
  const h = 'all.example.com';
  const all = compileRoutes(snapshotOf({ passthrough_routes: [r('all', { hosts: [h], path_prefix: '/' }), r('x', { hosts: [h], path_prefix: '/x' })] }));
  assert.equal(matchHostStage(all, h, '/anything/here')?.route.name, 'all');
  assert.equal(matchHostStage(all, h, '/')?.route.name, 'all');
  assert.equal(matchHostStage(all, h, '/x/y')?.route.name, 'x');
});
