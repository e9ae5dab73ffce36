import { test } from 'node:test';
import assert from 'node:assert/strict';
import { detectRequest } from './request-shape.ts';

const detect = (body: unknown) => detectRequest(Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)));

test('shapes in order: messages, input string/array, prompt, rerank, native envelope, opaque', () => {
  assert.deepEqual(detect({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }), { shape: 'chat', model: 'gpt-4o' });
  assert.deepEqual(detect({ model: 'claude-sonnet-4-5', max_tokens: 5, messages: [] }), { shape: 'chat', model: 'claude-sonnet-4-5' });
  assert.deepEqual(detect({ model: 'gpt-4.1', input: 'hi' }), { shape: 'responses', model: 'gpt-4.1' });
  assert.deepEqual(detect({ model: 'gpt-4.1', input: [{ role: 'user', content: 'hi' }] }), { shape: 'responses', model: 'gpt-4.1' });
  assert.deepEqual(detect({ model: 'davinci', prompt: 'once' }), { shape: 'completions', model: 'davinci' });
  assert.deepEqual(detect({ model: 'davinci', prompt: ['a', 'b'] }), { shape: 'completions', model: 'davinci' });
  assert.deepEqual(detect({ model: 'rerank-v3.5', query: 'q', documents: ['a'] }), { shape: 'rerank', model: 'rerank-v3.5' });
  assert.deepEqual(detect({ model: 'qwen-max', input: { messages: [] }, parameters: {} }), { shape: 'native', model: 'qwen-max' });
  // messages wins over input and prompt; input wins over prompt.
  assert.equal(detect({ prompt: 'p', input: 'i', messages: [] }).shape, 'chat');
  assert.equal(detect({ prompt: 'p', input: ['i'] }).shape, 'responses');
});

test('opaque bodies record no model', () => {
  for (const body of [
    { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
    { model: 'x', purpose: 'batch' },
    { model: 'x', messages: 'not-an-array' },
    { input: { messages: [] } },
    { query: 'q', documents: 'nope' },
    '',
    'not json',
    '[{"messages":[]}]',
    '{"messages": [',
  ]) {
    assert.deepEqual(detect(body), { shape: 'opaque', model: '' }, JSON.stringify(body));
  }
});

test('a non-string model is empty; a long model is bounded', () => {
  assert.deepEqual(detect({ model: 5, messages: [] }), { shape: 'chat', model: '' });
  assert.equal(detect({ model: 'm'.repeat(1000), messages: [] }).model.length, 256);
});

test('members are read as the upstream parses them: a repeated key is its last value, escaped keys are decoded', () => {
  assert.deepEqual(detect('{"model":"x","model":"limited","messages":[]}'), { shape: 'chat', model: 'limited' });
  assert.deepEqual(detect('{"mod\\u0065l":"limited","messages":[]}'), { shape: 'chat', model: 'limited' });
  assert.equal(detect('{"messages":[],"messages":"no"}').shape, 'opaque');
});

test('a multipart upload is opaque', () => {
  assert.equal(detect('--boundary\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--boundary--').shape, 'opaque');
});
