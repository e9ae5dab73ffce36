import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ProviderKeyView } from '../contract.ts';
import { adapterFor } from '../registry.ts';
import { anthropicAdapter, normalizeAnthropicBase } from './index.ts';

const key = (over: Partial<ProviderKeyView> = {}): ProviderKeyView => ({
  provider: 'anthropic', apiKey: 'sk-ant-test', apiBase: undefined, ...over,
});

test('declares the Messages wire protocol and SSE framing', () => {
  assert.equal(anthropicAdapter.id, 'anthropic');
  assert.deepEqual(anthropicAdapter.speaks, ['anthropic-messages']);
  assert.equal(anthropicAdapter.framing, 'sse');
  assert.ok(anthropicAdapter.translator !== undefined);
});

test('api_base normalisation: with or without /v1, trailing slashes, pasted endpoint paths', () => {
  for (const base of [
    'https://api.anthropic.com',
    'https://api.anthropic.com/',
    ' https://api.anthropic.com/v1 ',
    'https://api.anthropic.com/v1/',
    'https://api.anthropic.com/v1/messages',
    'https://api.anthropic.com/v1/messages/',
    'https://api.anthropic.com/v1/messages/count_tokens',
  ]) {
    assert.equal(normalizeAnthropicBase(base), 'https://api.anthropic.com', base);
  }
  assert.equal(normalizeAnthropicBase('http://127.0.0.1:8080/proxy/anthropic/v1'), 'http://127.0.0.1:8080/proxy/anthropic');
});

test('endpoint: messages and chat go to /v1/messages, count_tokens to /v1/messages/count_tokens', () => {
  for (const op of ['chat', 'messages'] as const) {
    const e = anthropicAdapter.endpoint(op, key());
    assert.ok(!(e instanceof Error));
    assert.equal(e.url, 'https://api.anthropic.com/v1/messages');
  }
  const c = anthropicAdapter.endpoint('count_tokens', key({ apiBase: 'https://relay.example/v1/' }));
  assert.ok(!(c instanceof Error));
  assert.equal(c.url, 'https://relay.example/v1/messages/count_tokens');
});

test('endpoint headers: x-api-key, pinned anthropic-version, JSON; no bearer', () => {
  const e = anthropicAdapter.endpoint('chat', key());
  assert.ok(!(e instanceof Error));
  assert.deepEqual(e.headers, { 'x-api-key': 'sk-ant-test', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' });
});

test('a key of another provider label needs its own api_base (its credential never goes to Anthropic)', () => {
  const e = anthropicAdapter.endpoint('chat', key({ provider: 'minimax' }));
  assert.ok(e instanceof Error);
  assert.equal(e.message.includes('sk-ant-test'), false);
  const ok = anthropicAdapter.endpoint('chat', key({ provider: 'minimax', apiBase: 'https://api.minimax.io/anthropic' }));
  assert.ok(!(ok instanceof Error) && ok.url === 'https://api.minimax.io/anthropic/v1/messages');
});

test('prepareRequest (native path): only the model changes', () => {
  const body = {
    model: 'alias',
    system: [{ type: 'text', text: 's', cache_control: { type: 'ephemeral' } }],
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 10,
    thinking: { type: 'enabled', budget_tokens: 2000 },
    temperature: 0.2,
  };
  const copy = structuredClone(body);
  const out = anthropicAdapter.prepareRequest('messages', body, { key: key(), upstreamModel: 'claude-sonnet-4-5' });
  assert.deepEqual(out, { ...copy, model: 'claude-sonnet-4-5' });
  assert.deepEqual(body, copy, 'the caller body is not mutated');
  const count = anthropicAdapter.prepareRequest('count_tokens', { model: 'alias', messages: [] }, { key: key(), upstreamModel: 'm' });
  assert.deepEqual(count, { model: 'm', messages: [] });
});


test('registry: provider label anthropic, or adapter anthropic on any label, selects this adapter', () => {
  assert.equal(adapterFor({ provider: 'anthropic' }), anthropicAdapter);
  assert.equal(adapterFor({ provider: 'anthropic', api_base: 'https://relay.example' }), anthropicAdapter);
  assert.equal(adapterFor({ provider: 'minimax', adapter: 'anthropic', api_base: 'https://api.minimax.io/anthropic' }), anthropicAdapter);
  assert.notEqual(adapterFor({ provider: 'openai' }), anthropicAdapter);
});
