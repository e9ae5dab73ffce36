// Test helper: a Snapshot built from a few inline resources (keys, models, policies), and the
// entries limit tests pass to the limiter.
import { Snapshot, type ApiKeyEntry, type ModelEntry } from '../snapshot/snapshot.ts';
import type { ApiKey, Model, ProviderKey, RateLimitPolicy, Resources } from '../resources/types.ts';

export function testSnapshot(parts: { api_keys?: Partial<ApiKey>[]; models?: Partial<Model>[]; policies?: Partial<RateLimitPolicy>[]; provider_keys?: Partial<ProviderKey>[] }): Snapshot {
  const resources = {
    provider_keys: (parts.provider_keys ?? []).map((k, i) => ({ id: `pk-${i}`, display_name: `pk${i}`, provider: 'openai', api_key: 'sk-test', api_base: 'http://127.0.0.1:9/v1', ...k })),
    models: (parts.models ?? []).map((m, i) => ({ id: `model-${i}`, display_name: `m${i}`, provider: 'openai', provider_key_id: 'none', ...m })),
    api_keys: (parts.api_keys ?? []).map((k, i) => ({ id: `key-${i}`, display_name: `k${i}`, key_hash: String(i).padStart(64, '0'), allowed_models: ['*'], ...k })),
    passthrough_routes: [],
    guardrails: [],
    guardrail_attachments: [],
    rate_limit_policies: (parts.policies ?? []).map((p, i) => ({ id: `policy-${i}`, name: `p${i}`, ...p })),
    observability_exporters: [],
  } as unknown as Resources;
  return new Snapshot(resources, 1, 0);
}

export function keyEntry(s: Snapshot, id: string): ApiKeyEntry {
  for (const k of s.apiKeysByHash.values()) if (k.id === id) return k;
  throw new Error(`no key ${id}`);
}

export function modelEntry(s: Snapshot, name: string): ModelEntry {
  const r = s.resolveModel(name);
  if (r === undefined) throw new Error(`no model ${name}`);
  return r.entry;
}
