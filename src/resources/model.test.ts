import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deriveId } from './ids.ts';
import { PK, assertErrors, expectOk, loadObj } from './test-helpers.ts';
import type { LoadResult } from './loader.ts';

const direct = { display_name: 'm', provider: 'openai', model_name: 'gpt-4o', provider_key: 'pk' };
const load = (...models: Record<string, unknown>[]): LoadResult => loadObj({ provider_keys: [PK], models });

test('a direct model with every optional block loads; block defaults are filled in', () => {
  const m = expectOk(load({
    ...direct,
    rate_limit: { rps: 1, rpm: 2, rph: 3, rpd: 4, tpm: 5, tpd: 6, concurrency: 7 },
    allowed_cidrs: ['10.0.0.0/8', '2001:db8::/32', '192.168.1.1'],
    timeout: 0,
    stream_timeout: 30000,
    retries: 2,
    cost: { input_per_1k: 0.001, output_per_1k: 0.002 },
    cooldown: {},
    background_model_check: { interval_seconds: 60 },
    auto_prompt_caching: { ttl: '1h' },
    embedding: { dimensions: 256 },
  })).models[0];
  assert.ok('provider' in m);
  assert.equal(m.provider_key_id, deriveId('provider_keys', 'pk'));
  assert.deepEqual(m.cooldown, {
    enabled: true, default_seconds: 30, max_seconds: 600, honor_retry_after: true,
    trigger_statuses: [401, 408, 429, 500, 502, 503, 504], trigger_on_timeout: true, trigger_on_transport: true,
  });
  assert.deepEqual(m.embedding, { dimensions: 256, normalize: true });
  assert.deepEqual(m.auto_prompt_caching, { enabled: true, ttl: '1h' });
});

test('model_name is optional (the display_name is sent upstream)', () => {
  const { model_name: _n, ...noName } = direct;
  expectOk(load(noName));
});

test('direct model field rules', () => {
  assertErrors(load({
    ...direct,
    provider: 'x'.repeat(65),
    allowed_cidrs: ['10.0.0.0/99'],
    timeout: -1,
    cost: { input_per_1k: -1 },
    cooldown: { default_seconds: 700, max_seconds: 600, trigger_statuses: [99] },
    background_model_check: { interval_seconds: 1 },
    auto_prompt_caching: { ttl: '2h' },
  }), [
    'models[0] ("m").provider: must be at most 64 characters',
    'models[0] ("m").allowed_cidrs[0]: must be a CIDR (e.g. 10.0.0.0/8) or an IP address, IPv4 as four decimal parts without leading zeros',
    'models[0] ("m").timeout: must be >= 0',
    'models[0] ("m").cost.input_per_1k: must be >= 0',
    'models[0] ("m").cooldown.trigger_statuses[0]: must be >= 100',
    'models[0] ("m").background_model_check.interval_seconds: must be >= 5',
    'models[0] ("m").auto_prompt_caching.ttl: must be one of: 5m, 1h',
    'models[0] ("m").cooldown.default_seconds: must not exceed max_seconds',
  ]);
});

test('a display_name may hold one "*"; only direct models may be wildcards', () => {
  expectOk(load({ ...direct, display_name: 'openai/*', model_name: '*' }, { ...direct, display_name: 'gpt-*-preview' }));
  assertErrors(load({ ...direct, display_name: 'a*b*' }, { display_name: 'g*', routing: { targets: [{ model: 'x*' }] } }), [
    'models[0] ("a*b*").display_name: may contain at most one "*"',
    'models[1] ("g*").display_name: only direct models may be wildcards ("*"); a routing model needs a plain name',
  ]);
});

test('a "*" in model_name needs a wildcard display_name; at most one', () => {
  assertErrors(load({ ...direct, model_name: 'gpt-*' }, { ...direct, display_name: 'x/*', model_name: '*-*' }), [
    'models[0] ("m").model_name: may contain "*" only when display_name is a wildcard (the "*" is replaced by the captured text)',
    'models[1] ("x/*").model_name: may contain at most one "*"',
  ]);
});

test('a routing model loads with defaults; direct-only fields are rejected on it', () => {
  const g = expectOk(load(direct, {
    display_name: 'g',
    routing: {
      targets: [{ model: 'm', weight: 3, priority: 2, tags: ['default'] }],
      strategy: 'consistent_hash',
      hash_on: [{ type: 'header', name: 'x-session' }, { type: 'api_key' }],
      fallback_on_statuses: [404],
      max_fallbacks: 1,
      when_all_unavailable: 'try_anyway',
    },
    timeout: 1000,
    stream_timeout: 100,
    rate_limit: { rpm: 1 },
  })).models[1];
  assert.ok('routing' in g);
  assert.equal(g.routing.retry_on_429, false);
  assert.equal(g.routing.when_all_unavailable, 'try_anyway');
  assertErrors(load(direct, { display_name: 'g', routing: { targets: [{ model: 'm' }] }, provider: 'openai', cost: {}, model_name: 'x' }), [
    'models[1] ("g").provider: not allowed on a routing model (only direct models have a provider, key and upstream model)',
    'models[1] ("g").cost: not allowed on a routing model (only direct models have a provider, key and upstream model)',
    'models[1] ("g").model_name: not allowed on a routing model (only direct models have a provider, key and upstream model)',
  ]);
});

test('routing rules: enums, minimums, hash_on names, statuses, duplicate targets', () => {
  assertErrors(load(direct, {
    display_name: 'g',
    routing: {
      targets: [{ model: 'm' }, { model: 'm' }, { model: 'm', priority: 1 }, { model: 'm', weight: -1, priority: 2 }],
      hash_on: [{ type: 'cookie' }, { type: 'client_ip', name: 'x' }, { type: 'query' }],
      fallback_on_statuses: [200],
      when_all_unavailable: 'wait',
    },
  }), [
    'models[1] ("g").routing.targets[3].weight: must be >= 0',
    'models[1] ("g").routing.hash_on[2].type: must be one of: header, cookie, api_key, client_ip',
    'models[1] ("g").routing.when_all_unavailable: must be one of: fail, try_anyway',
    'models[1] ("g").routing.targets[1].model: duplicate target (same model and priority as targets[0])',
    'models[1] ("g").routing.hash_on[0].name: required for type cookie',
    'models[1] ("g").routing.hash_on[1].name: only allowed for type header or cookie',
    'models[1] ("g").routing.hash_on: only used by strategy consistent_hash',
    'models[1] ("g").routing.fallback_on_statuses[0]: must be an HTTP error status (400-599)',
  ]);
});

test('a model without routing is direct: provider and a key are required', () => {
  assertErrors(load({ display_name: 'm' }), [
    'models[0] ("m").provider_key: required: the name of a provider key (or provider_key_id)',
    'models[0] ("m").provider: required',
  ]);
});
