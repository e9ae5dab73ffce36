import { test } from 'node:test';
import assert from 'node:assert/strict';
import { imagesUsage, parseImagesRequest } from './openai-images.ts';
import { refusedParam } from '../../../test/harness/refused-param.ts';

const parse = (body: unknown) => parseImagesRequest(Buffer.from(JSON.stringify(body)));

const refused = (body: unknown) => refusedParam(parseImagesRequest, body);

test('a prompt with any other field kept; n null or positive', () => {
  const body = { model: 'm', prompt: 'p', n: 2, size: '1024x1024', quality: 'high', background: 'transparent', output_format: 'webp' };
  assert.deepEqual(parse(body), body);
  assert.equal(parse({ model: 'm', prompt: 'p', n: null, stream: false }).n, null);
});

test('refusals name their field', () => {
  assert.equal(refused({ prompt: 'p' }), 'model');
  for (const prompt of [undefined, '', 3, ['p']]) assert.equal(refused({ model: 'm', prompt }), 'prompt');
  for (const n of [0, -1, 1.5, '2']) assert.equal(refused({ model: 'm', prompt: 'p', n }), 'n');
  assert.equal(refused({ model: 'm', prompt: 'p', stream: true }), 'stream');
});

test('usage: gpt-image tokens as input / output / total; none reported is none', () => {
  assert.deepEqual(imagesUsage({ usage: { input_tokens: 3, output_tokens: 4, total_tokens: 7 } }), { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 });
  assert.equal(imagesUsage({ data: [] }), undefined);
  assert.equal(imagesUsage({ usage: null }), undefined);
});
