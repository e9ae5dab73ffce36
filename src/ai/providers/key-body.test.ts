import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileBodyShaping, shapeRequestBody } from './key-body.ts';
import { openaiAdapter } from './openai/index.ts';
import { encodeAnthropicRequest } from './anthropic/encode.ts';
import type { ProviderKeyView } from './contract.ts';

const key: ProviderKeyView = { provider: 'openai', apiKey: 'sk-test', apiBase: undefined };

test('a key without body options compiles to nothing: the request path skips it', () => {
  assert.equal(compileBodyShaping(undefined, undefined), undefined);
  assert.equal(compileBodyShaping({ param_renames: {}, default_body_fields: {} }, false), undefined);
});

test('param_renames have the last word over the adapter built-in renames', () => {
  const s = compileBodyShaping({ param_renames: { max_completion_tokens: 'max_output' } }, undefined)!;
  const body = openaiAdapter.prepareRequest('chat', { model: 'a', messages: [], max_tokens: 5 }, { key, upstreamModel: 'o1' });
  const r = shapeRequestBody(body, s);
  assert.equal(r.max_output, 5);
  assert.equal('max_completion_tokens' in r, false);
  const a = shapeRequestBody(encodeAnthropicRequest({ messages: [{ role: 'user', content: 'x' }], max_tokens: 10 }, { key, upstreamModel: 'm' }),
    compileBodyShaping({ param_renames: { max_tokens: 'max_output_tokens' } }, undefined)!);
  assert.equal(a.max_output_tokens, 10);
  assert.equal('max_tokens' in a, false);
});

test('param_constraints clamp a numeric temperature into range and leave others alone', () => {
  const s = compileBodyShaping({ param_constraints: { temperature_min: 0.2, temperature_max: 0.5 } }, undefined)!;
  assert.equal(shapeRequestBody({ temperature: 1.5 }, s).temperature, 0.5);
  assert.equal(shapeRequestBody({ temperature: 0 }, s).temperature, 0.2);
  assert.equal(shapeRequestBody({ temperature: 0.3 }, s).temperature, 0.3);
  assert.deepEqual(shapeRequestBody({}, s), {});
  assert.equal(shapeRequestBody({ temperature: 'hot' }, s).temperature, 'hot');
});

test('default_body_fields fill absent fields only, and their values cannot be changed through a body', () => {
  const s = compileBodyShaping({ default_body_fields: { user: 'gw', metadata: { tier: 'gold' } } }, undefined)!;
  const a = shapeRequestBody({ model: 'm' }, s);
  assert.deepEqual(a, { model: 'm', user: 'gw', metadata: { tier: 'gold' } });
  assert.throws(() => { (a.metadata as Record<string, unknown>).tier = 'x'; });
  assert.equal(shapeRequestBody({ user: 'caller' }, s).user, 'caller');
  assert.equal(shapeRequestBody({ user: null }, s).user, null);
});

test('the order: renames, clamp, defaults, so a default never hides a renamed field', () => {
  const s = compileBodyShaping({ param_renames: { max_tokens: 'max_output' }, default_body_fields: { max_output: 1 } }, undefined)!;
  assert.equal(shapeRequestBody({ max_tokens: 9 }, s).max_output, 9);
  assert.equal(shapeRequestBody({}, s).max_output, 1);
});

test('content_list_to_string flattens text-only content lists without touching the caller messages', () => {
  const s = compileBodyShaping(undefined, true)!;
  const parts = [{ type: 'text', text: 'Hello, ' }, { type: 'text', text: 'world' }];
  const mixed = [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'https://x/y.png' } }];
  const messages = [
    { role: 'system', content: 'plain' },
    { role: 'user', content: parts },
    { role: 'user', content: mixed },
    { role: 'user', content: [] },
  ];
  const caller = { messages };
  const out = shapeRequestBody({ ...caller }, s);
  assert.deepEqual(out.messages, [
    { role: 'system', content: 'plain' },
    { role: 'user', content: 'Hello, world' },
    { role: 'user', content: mixed },
    { role: 'user', content: [] },
  ]);
  // A later attempt on another key reads the caller's body again: it is as sent.
  assert.equal(messages[1].content, parts);
  assert.notEqual(out.messages, messages);
});
