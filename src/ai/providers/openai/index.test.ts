import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isReasoningModel, normalizeOpenAIBase, openaiAdapter } from './index.ts';
import { parseRetryAfter } from '../../../lib/http-headers.ts';
import type { ProviderKeyView } from '../contract.ts';

const key = (over: Partial<ProviderKeyView> = {}): ProviderKeyView => ({
  provider: 'openai', apiKey: 'sk-test', apiBase: undefined, ...over,
});

test('api_base normalisation tolerates slashes, whitespace and pasted suffixes', () => {
  assert.equal(normalizeOpenAIBase(' https://x.example/v1/ '), 'https://x.example/v1');
  assert.equal(normalizeOpenAIBase('https://x.example/v1/chat/completions'), 'https://x.example/v1');
  assert.equal(normalizeOpenAIBase('https://api.cohere.com/v2/rerank'), 'https://api.cohere.com/v2');
  assert.equal(normalizeOpenAIBase('https://x.example/v1/images/generations/'), 'https://x.example/v1');
  assert.equal(normalizeOpenAIBase('https://api.openai.com'), 'https://api.openai.com/v1');
  assert.equal(normalizeOpenAIBase('http://127.0.0.1:8080/v1'), 'http://127.0.0.1:8080/v1');
});

test('endpoint: default OpenAI base only for provider openai; bearer credential', () => {
  const e = openaiAdapter.endpoint('chat', key());
  assert.ok(!(e instanceof Error));
  assert.equal(e.url, 'https://api.openai.com/v1/chat/completions');
  assert.equal(e.headers.authorization, 'Bearer sk-test');
  assert.ok(openaiAdapter.endpoint('chat', key({ provider: 'deepseek' })) instanceof Error);
  const d = openaiAdapter.endpoint('chat', key({ provider: 'deepseek', apiBase: 'https://api.deepseek.com/v1' }));
  assert.ok(!(d instanceof Error) && d.url === 'https://api.deepseek.com/v1/chat/completions');
});

test('embeddings: the same base, /embeddings, the same credential; the body forwarded with the upstream model only', () => {
  const e = openaiAdapter.endpoint('embeddings', key({ provider: 'deepseek', apiBase: 'https://api.example.com/v1/embeddings' }));
  assert.ok(!(e instanceof Error));
  assert.equal(e.url, 'https://api.example.com/v1/embeddings');
  assert.equal(e.headers.authorization, 'Bearer sk-test');
  assert.equal((openaiAdapter.endpoint('embeddings', key()) as { url: string }).url, 'https://api.openai.com/v1/embeddings');
  assert.ok(openaiAdapter.endpoint('embeddings', key({ provider: 'deepseek' })) instanceof Error);
  const body = { model: 'alias', input: ['a'], max_tokens: 5, stream: true, dimensions: 3 };
  assert.deepEqual(openaiAdapter.prepareRequest('embeddings', body, { key: key(), upstreamModel: 'o3-embed' }), { ...body, model: 'o3-embed' });
  assert.ok(openaiAdapter.speaks.includes('openai-embeddings'));
});

test('completions: <api_base>/completions; stream usage asked for; no chat rewrites (max_tokens stays, even for a reasoning model name)', () => {
  const e = openaiAdapter.endpoint('completions', key({ provider: 'vllm', apiBase: 'http://gpu.local:8000/v1/completions' }));
  assert.ok(!(e instanceof Error));
  assert.equal(e.url, 'http://gpu.local:8000/v1/completions');
  const body = { model: 'alias', prompt: 'x', max_tokens: 5, stream: true };
  assert.deepEqual(openaiAdapter.prepareRequest('completions', body, { key: key(), upstreamModel: 'o3-mini' }), { ...body, model: 'o3-mini', stream_options: { include_usage: true } });
  assert.deepEqual(openaiAdapter.prepareRequest('completions', { model: 'a', prompt: 'x' }, { key: key(), upstreamModel: 'u' }), { model: 'u', prompt: 'x' });
  assert.ok(openaiAdapter.speaks.includes('openai-completions'));
});

test('rerank: <api_base>/rerank (Cohere v2, Jina, vLLM bases alike); the body forwarded with the upstream model only', () => {
  for (const [apiBase, url] of [
    ['https://api.cohere.com/v2', 'https://api.cohere.com/v2/rerank'],
    ['https://api.jina.ai/v1/', 'https://api.jina.ai/v1/rerank'],
  ]) {
    const e = openaiAdapter.endpoint('rerank', key({ provider: 'cohere', apiBase }));
    assert.ok(!(e instanceof Error));
    assert.equal(e.url, url);
    assert.equal(e.headers.authorization, 'Bearer sk-test');
  }
  const body = { model: 'a', query: 'q', documents: ['d'], top_n: 1, stream: true };
  assert.deepEqual(openaiAdapter.prepareRequest('rerank', body, { key: key(), upstreamModel: 'rr' }), { ...body, model: 'rr' });
});

test('image generation: <api_base>/images/generations; the body forwarded with the upstream model only; the adapter serves nothing else beyond its paths', () => {
  const e = openaiAdapter.endpoint('images', key());
  assert.ok(!(e instanceof Error) && e.url === 'https://api.openai.com/v1/images/generations');
  const s = openaiAdapter.endpoint('speech', key({ apiBase: 'http://tts.local/v1/audio/speech' }));
  assert.ok(!(s instanceof Error) && s.url === 'http://tts.local/v1/audio/speech');
  assert.deepEqual(openaiAdapter.prepareRequest('speech', { model: 'a', input: 'hi', voice: 'alloy' }, { key: key(), upstreamModel: 'tts-1' }), { model: 'tts-1', input: 'hi', voice: 'alloy' });
  const body = { model: 'a', prompt: 'p', n: 2, max_tokens: 3 };
  assert.deepEqual(openaiAdapter.prepareRequest('images', body, { key: key(), upstreamModel: 'gpt-image-1' }), { ...body, model: 'gpt-image-1' });
  assert.ok(openaiAdapter.endpoint('messages', key()) instanceof Error);
  assert.ok(openaiAdapter.endpoint('count_tokens', key()) instanceof Error);
});

const messages = [
  { role: 'user', content: 'a' },
  { role: 'developer', content: 'be brief' },
  { role: 'user', content: 'b' },
];

test('developer messages stay unchanged for provider openai, whatever the model or base', () => {
  const out = openaiAdapter.prepareRequest('chat', { model: 'alias', messages }, { key: key({ apiBase: 'http://proxy.local/v1' }), upstreamModel: 'llama' });
  assert.deepEqual(out.messages, messages);
  assert.equal(out.model, 'llama');
});

test('developer messages become system messages in the same position for other providers', () => {
  const out = openaiAdapter.prepareRequest('chat', { model: 'alias', messages }, { key: key({ provider: 'groq', apiBase: 'http://g/v1' }), upstreamModel: 'm' });
  assert.deepEqual(out.messages, [messages[0], { role: 'system', content: 'be brief' }, messages[2]]);
});

test('max_tokens goes as max_completion_tokens to OpenAI reasoning models only', () => {
  const r = openaiAdapter.prepareRequest('chat', { model: 'a', messages: [], max_tokens: 50 }, { key: key(), upstreamModel: 'o3-mini' });
  assert.equal(r.max_completion_tokens, 50);
  assert.equal('max_tokens' in r, false);
  const g = openaiAdapter.prepareRequest('chat', { model: 'a', messages: [], max_tokens: 50 }, { key: key(), upstreamModel: 'gpt-4o' });
  assert.equal(g.max_tokens, 50);
  const other = openaiAdapter.prepareRequest('chat', { model: 'a', messages: [], max_tokens: 50 }, { key: key({ provider: 'x', apiBase: 'http://x/v1' }), upstreamModel: 'o3-mini' });
  assert.equal(other.max_tokens, 50);
  assert.equal(isReasoningModel('gpt-5-mini'), true);
  assert.equal(isReasoningModel('gpt-4.1'), false);
  // Fine-tuned models carry their base model after `ft:`.
  assert.equal(isReasoningModel('ft:o4-mini-2025-04-16:acme::abc123'), true);
  assert.equal(isReasoningModel('ft:gpt-4o-mini-2024-07-18:acme::abc123'), false);
});

test('an unlabelled key without api_base speaks to OpenAI itself: OpenAI\'s rules apply to it', () => {
  const unlabelled = key({ provider: '' });
  const e = openaiAdapter.endpoint('chat', unlabelled);
  assert.ok(!(e instanceof Error) && e.url === 'https://api.openai.com/v1/chat/completions');
  const out = openaiAdapter.prepareRequest('chat', { model: 'a', messages, max_tokens: 50 }, { key: unlabelled, upstreamModel: 'o3' });
  assert.deepEqual(out.messages, messages);
  assert.equal(out.max_completion_tokens, 50);
  assert.equal('max_tokens' in out, false);
  // Unlabelled with its own base: another OpenAI-compatible service.
  const elsewhere = openaiAdapter.prepareRequest('chat', { model: 'a', messages }, { key: key({ provider: '', apiBase: 'http://x/v1' }), upstreamModel: 'o3' });
  assert.equal((elsewhere.messages as { role: string }[])[1].role, 'system');
});

test('streams always ask for usage: a caller cannot turn off what token limits are charged from', () => {
  const r = openaiAdapter.prepareRequest('chat', { model: 'a', messages: [], stream: true }, { key: key(), upstreamModel: 'm' });
  assert.deepEqual(r.stream_options, { include_usage: true });
  const c = openaiAdapter.prepareRequest('chat', { model: 'a', messages: [], stream: true, stream_options: { include_usage: false, x: 1 } }, { key: key(), upstreamModel: 'm' });
  assert.deepEqual(c.stream_options, { include_usage: true, x: 1 });
});

test('classifies upstream errors', () => {
  const c = openaiAdapter.classifyError(429, '{"error":{"message":"slow","type":"requests","code":"rate_limit_exceeded"}}', { 'retry-after': '3' });
  assert.equal(c.errorClass, 'rate_limited');
  assert.equal(c.retryAfterMs, 3000);
  assert.equal(c.code, 'rate_limit_exceeded');
  assert.equal(openaiAdapter.classifyError(500, '', {}).retryable, true);
  assert.equal(openaiAdapter.classifyError(400, '', {}).retryable, false);
  assert.equal(openaiAdapter.classifyError(401, '', {}).errorClass, 'invalid_credentials');
  assert.equal(openaiAdapter.classifyError(400, '{"error":{"message":"no","code":"content_filter"}}', {}).errorClass, 'content_filter');
});

test('Retry-After as an HTTP date', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  assert.equal(parseRetryAfter('Thu, 01 Jan 2026 00:00:05 GMT', now), 5000);
  assert.equal(parseRetryAfter('soon', now), undefined);
});
