// The OpenAI-compatible adapter: provider `openai` and every vendor that speaks the Chat
// Completions wire format at its own `api_base` (an OpenAI-compatible vendor is configuration),
// and the Embeddings, (legacy) Completions, image generation and rerank endpoints of the same base (`<api_base>/rerank`:
// Cohere's `https://api.cohere.com/v2`, Jina's `https://api.jina.ai/v1`, vLLM, Infinity).
import { readOpenAIError } from '../../protocols/openai-chat.ts';
import type { Adapter, AdapterTarget, ClassifiedError, EndpointSpec, Operation, ProviderKeyView } from '../contract.ts';
import { retryAfterMsOf } from '../../../lib/http-headers.ts';
import { trimApiBase } from '../api-base.ts';

export const OPENAI_DEFAULT_BASE = 'https://api.openai.com/v1';

const PASTED_SUFFIXES = ['/chat/completions', '/completions', '/embeddings', '/responses', '/rerank', '/images/generations', '/audio/speech'];

/** Normalise an api_base: trim, drop trailing slashes and pasted endpoint suffixes, add `/v1` to a bare OpenAI host. */
export function normalizeOpenAIBase(apiBase: string): string {
  const base = trimApiBase(apiBase, PASTED_SUFFIXES);
  return /^https?:\/\/api\.openai\.com$/.test(base) ? `${base}/v1` : base;
}

/**
 * Reference-family reasoning models (fine-tuned ones too: `ft:<base>:...`) take
 * `max_completion_tokens` instead of `max_tokens`.
 */
export function isReasoningModel(model: string): boolean {
  return /^(ft:)?(o\d|gpt-5)/.test(model);
}

/**
 * The key speaks to OpenAI itself: labelled `openai`, or unlabelled and without an `api_base`
 * (which sends it to OpenAI's own base). OpenAI's own rules (`developer` kept, reasoning models'
 * `max_completion_tokens`) apply to it.
 */
function isOpenAIKey(key: ProviderKeyView): boolean {
  return key.provider === 'openai' || (key.provider === '' && (key.apiBase === undefined || key.apiBase.trim() === ''));
}

/** The path under the key's base of each operation the adapter serves. */
const PATHS: Partial<Record<Operation, string>> = {
  chat: 'chat/completions',
  completions: 'completions',
  embeddings: 'embeddings',
  rerank: 'rerank',
  images: 'images/generations',
  speech: 'audio/speech',
};

function endpoint(operation: Operation, key: ProviderKeyView): EndpointSpec | Error {
  const path = PATHS[operation];
  if (path === undefined) return new Error(`the OpenAI-compatible adapter does not serve ${operation}`);
  let base: string;
  if (key.apiBase !== undefined && key.apiBase.trim() !== '') base = normalizeOpenAIBase(key.apiBase);
  else if (key.provider === 'openai' || key.provider === '') base = OPENAI_DEFAULT_BASE;
  // Never send a non-OpenAI key to OpenAI by default.
  else return new Error(`provider key for "${key.provider}" has no api_base`);
  return {
    url: `${base}/${path}`,
    headers: { authorization: `Bearer ${key.apiKey}`, 'content-type': 'application/json' },
  };
}

function prepareRequest(operation: Operation, body: Record<string, unknown>, target: AdapterTarget): Record<string, unknown> {
  const out: Record<string, unknown> = { ...body, model: target.upstreamModel };
  if (operation === 'embeddings' || operation === 'rerank' || operation === 'images' || operation === 'speech') return out;
  if (operation === 'completions') return askForStreamUsage(out);
  const isOpenAI = isOpenAIKey(target.key);
  if (!isOpenAI && Array.isArray(body.messages)) {
    // Other providers on this adapter get `developer` as a system message in the same position.
    let changed = false;
    const messages = (body.messages as Record<string, unknown>[]).map((m) => {
      if (m.role !== 'developer') return m;
      changed = true;
      return { ...m, role: 'system' };
    });
    if (changed) out.messages = messages;
  }
  if (isOpenAI && out.max_tokens !== undefined && isReasoningModel(target.upstreamModel)) {
    if (out.max_completion_tokens === undefined) out.max_completion_tokens = out.max_tokens;
    delete out.max_tokens;
  }
  return askForStreamUsage(out);
}

/**
 * The gateway taps usage from every stream (token limits and usage events are charged from it),
 * so it always asks, even when the caller said `include_usage: false`; the usage-only chunk
 * reaches the caller only if it asked.
 */
function askForStreamUsage(out: Record<string, unknown>): Record<string, unknown> {
  if (out.stream === true) {
    const so = out.stream_options as Record<string, unknown> | undefined;
    if (so?.include_usage !== true) out.stream_options = { ...so, include_usage: true };
  }
  return out;
}

function classifyError(
  status: number,
  body: string,
  headers: Readonly<Record<string, string | string[] | undefined>>,
): ClassifiedError {
  const fields = readOpenAIError(body);
  const code = fields?.code;
  let errorClass: ClassifiedError['errorClass'] = 'upstream_status';
  if (status === 401 || status === 403) errorClass = 'invalid_credentials';
  else if (status === 429) errorClass = 'rate_limited';
  // `moderation_blocked`: gpt-image's refusal of a prompt (DALL·E's is `content_policy_violation`).
  else if (code === 'content_filter' || code === 'content_policy_violation' || code === 'moderation_blocked') errorClass = 'content_filter';
  else if (status >= 400 && status < 500) errorClass = 'invalid_request';
  return {
    errorClass,
    retryable: status >= 500 || status === 408,
    retryAfterMs: retryAfterMsOf(headers),
    message: fields?.message,
    type: fields?.type,
    code: fields?.code,
    param: fields?.param,
  };
}

export const openaiAdapter: Adapter = {
  id: 'openai',
  speaks: ['openai-chat', 'openai-embeddings', 'openai-completions', 'rerank', 'openai-images', 'openai-speech'],
  framing: 'sse',
  endpoint,
  prepareRequest,
  classifyError,
};
