// Adapter registry: which adapter serves a provider key. A key's explicit `adapter` wins, then
// an adapter registered under its provider label, then the OpenAI-compatible family when the key
// has its own api_base.
import type { Adapter } from './contract.ts';
import { anthropicAdapter } from './anthropic/index.ts';
import { mockAdapter } from './mock/index.ts';
import { openaiAdapter } from './openai/index.ts';

const adapters = new Map<string, Adapter>([
  [openaiAdapter.id, openaiAdapter],
  [anthropicAdapter.id, anthropicAdapter],
  [mockAdapter.id, mockAdapter],
]);

/** The adapter for a provider key, or an explanation of why there is none. */
export function adapterFor(key: { provider: string; adapter?: string | null; api_base?: string | null }): Adapter | string {
  if (key.adapter !== undefined && key.adapter !== null) {
    return adapters.get(key.adapter) ?? `adapter "${key.adapter}" is not available in this build`;
  }
  const byProvider = adapters.get(key.provider);
  if (byProvider !== undefined) return byProvider;
  if (key.api_base !== undefined && key.api_base !== null && key.api_base !== '') return openaiAdapter;
  return `no adapter for provider "${key.provider}" (set adapter, or an OpenAI-compatible api_base)`;
}
