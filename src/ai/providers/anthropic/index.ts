// The Anthropic Messages adapter: provider `anthropic`, and any key with `adapter: anthropic`.
// Native for callers that speak Messages; canonical chat requests are translated (encode.ts,
// decode.ts, stream.ts).
import type { Adapter, AdapterTarget, EndpointSpec, Operation, ProviderKeyView, Translator } from '../contract.ts';
import { decodeAnthropicResponse } from './decode.ts';
import { encodeAnthropicRequest } from './encode.ts';
import { classifyAnthropicError } from './errors.ts';
import { AnthropicStreamDecoder } from './stream.ts';
import { trimApiBase } from '../api-base.ts';

export const ANTHROPIC_DEFAULT_BASE = 'https://api.anthropic.com';
export const ANTHROPIC_VERSION = '2023-06-01';

/** Longest first: a pasted endpoint path, then a bare version segment. */
const PASTED_SUFFIXES = ['/v1/messages/count_tokens', '/v1/messages', '/v1'];

/** Normalise an api_base to the host root: trim, drop trailing slashes and a pasted `/v1` or `/v1/messages`. */
export function normalizeAnthropicBase(apiBase: string): string {
  return trimApiBase(apiBase, PASTED_SUFFIXES);
}

function endpoint(operation: Operation, key: ProviderKeyView): EndpointSpec | Error {
  let base: string;
  if (key.apiBase !== undefined && key.apiBase.trim() !== '') base = normalizeAnthropicBase(key.apiBase);
  else if (key.provider === 'anthropic' || key.provider === '') base = ANTHROPIC_DEFAULT_BASE;
  // A key of another provider label on this adapter (an Anthropic-compatible vendor) never goes to
  // Anthropic by default: its credential belongs elsewhere.
  else return new Error(`provider key for "${key.provider}" has no api_base`);
  const path = operation === 'count_tokens' ? '/v1/messages/count_tokens' : '/v1/messages';
  return {
    url: base + path,
    headers: { 'x-api-key': key.apiKey, 'anthropic-version': ANTHROPIC_VERSION, 'content-type': 'application/json' },
  };
}

/** Native path: the caller already speaks Messages; only the model changes. */
function prepareRequest(_operation: Operation, body: Record<string, unknown>, target: AdapterTarget): Record<string, unknown> {
  return { ...body, model: target.upstreamModel };
}

export const anthropicTranslator: Translator = {
  encodeRequest: encodeAnthropicRequest,
  decodeResponse: (text) => decodeAnthropicResponse(text),
  createStreamDecoder: () => new AnthropicStreamDecoder(),
};

export const anthropicAdapter: Adapter = {
  id: 'anthropic',
  speaks: ['anthropic-messages'],
  framing: 'sse',
  endpoint,
  prepareRequest,
  classifyError: classifyAnthropicError,
  translator: anthropicTranslator,
};
