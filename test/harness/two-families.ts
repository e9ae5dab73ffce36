// Resources and SDK clients for e2e tests that drive both caller protocols against one mock
// upstream answering as either provider family: provider keys `oa` (OpenAI family, at
// `<mock>/v1`) and `an` (Anthropic, at `<mock>`), one model on each (`m-openai`, `m-anthropic`),
// and one caller key allowed every model.
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import type { Gateway } from './spawn.ts';
import type { MockUpstream } from './mock-upstream.ts';
import type { Family } from './provider-wire.ts';
import { useProxyFixture } from './proxy-fixture.ts';

/** The provider keys `oa` and `an`, both with `apiKey`. */
export function twoFamilyProviderKeys(mockUrl: string, apiKey: string): object[] {
  return [
    { display_name: 'oa', provider: 'openai', api_key: apiKey, api_base: `${mockUrl}/v1` },
    { display_name: 'an', provider: 'anthropic', api_key: apiKey, api_base: mockUrl },
  ];
}

/** The resources document: the two provider keys, `m-openai` and `m-anthropic` then `models`, the caller key read from `keyEnv`. */
export function twoFamilyResources(mockUrl: string, opts: { upstreamKey: string; keyEnv: string; models?: object[] }): object {
  return {
    _format_version: '1',
    provider_keys: twoFamilyProviderKeys(mockUrl, opts.upstreamKey),
    models: [
      { display_name: 'm-openai', provider: 'openai', model_name: 'gpt-4o-up', provider_key: 'oa' },
      { display_name: 'm-anthropic', provider: 'anthropic', model_name: 'claude-up', provider_key: 'an' },
      ...(opts.models ?? []),
    ],
    api_keys: [{ display_name: 'caller', key_env: opts.keyEnv, allowed_models: ['*'] }],
  };
}

/** The model of each family in twoFamilyResources. */
export const modelFor = (f: Family): string => (f === 'openai' ? 'm-openai' : 'm-anthropic');

/** Both official SDKs pointed at the gateway with `callerKey`, no retries. */
export function sdkClients(gw: Gateway, callerKey: string, anthropicHeaders?: Record<string, string>): { openai: OpenAI; anthropic: Anthropic } {
  return {
    openai: new OpenAI({ apiKey: callerKey, baseURL: `${gw.proxyUrl}/v1`, maxRetries: 0 }),
    anthropic: new Anthropic({ apiKey: callerKey, baseURL: gw.proxyUrl, maxRetries: 0, defaultHeaders: anthropicHeaders }),
  };
}

export interface TwoFamilyFixture {
  mock: MockUpstream;
  gw: Gateway;
  openai: OpenAI;
  anthropic: Anthropic;
}

/**
 * One gateway serving twoFamilyResources (no same-target retries) for a test file, with both SDKs
 * pointed at it; `ready` copies the fixture into the file's variables once it runs.
 */
export function useTwoFamilyFixture(opts: {
  callerKey: string;
  upstreamKey: string;
  models?: object[];
  anthropicHeaders?: Record<string, string>;
  ready: (fx: TwoFamilyFixture) => void;
}): void {
  const keyEnv = 'E2E_TWO_FAMILY_CALLER_KEY';
  useProxyFixture({
    config: { upstream: { retries: 0 } },
    resources: (mockUrl) => twoFamilyResources(mockUrl, { upstreamKey: opts.upstreamKey, keyEnv, models: opts.models }),
    env: { [keyEnv]: opts.callerKey },
    ready: ({ mock, gw }) => opts.ready({ mock, gw, ...sdkClients(gw, opts.callerKey, opts.anthropicHeaders) }),
  });
}
