import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../config/load.ts';
import { createLogger } from './logger.ts';
import { observabilitySinks } from './wiring.ts';

function sinks() {
  const loaded = loadConfig({ env: {} });
  assert.ok(loaded.ok);
  return observabilitySinks(loaded.config.observability, createLogger('error'));
}

const resources = (model: object) => ({ observability_exporters: [], models: [model] });

test('the resources hash (/status/config) is over canonical JSON: key order does not change it, a value does', async () => {
  const s = sinks();
  s.applied(resources({ display_name: 'oa', provider: 'openai', limits: { rpm: 1, tpm: 2 } }));
  const first = s.resourcesHash();
  assert.match(first ?? '', /^sha256:[0-9a-f]{64}$/);
  s.applied(resources({ limits: { tpm: 2, rpm: 1 }, provider: 'openai', display_name: 'oa' }));
  assert.equal(s.resourcesHash(), first);
  s.applied(resources({ display_name: 'oa', provider: 'openai', limits: { rpm: 1, tpm: 3 } }));
  assert.notEqual(s.resourcesHash(), first);
  await s.close();
});
