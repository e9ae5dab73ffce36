import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseEmbeddingsRequest } from './openai-embeddings.ts';
import { GatewayError } from '../../lib/errors.ts';

const parse = (body: unknown) => parseEmbeddingsRequest(Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)));

function refused(body: unknown): { code: string; param: string | null; message: string } {
  try {
    parse(body);
  } catch (e) {
    assert.ok(e instanceof GatewayError);
    return { code: e.code, param: e.param, message: e.message };
  }
  assert.fail(`accepted ${JSON.stringify(body)}`);
}

test('every input form OpenAI takes is accepted, with unchecked fields kept', () => {
  for (const input of ['text', ['a', 'b'], [1, 2, 3], [[1, 2], [3]]]) {
    const body = { model: 'm', input, dimensions: 8, user: 'u', encoding_format: 'base64', vendor_field: { x: 1 } };
    assert.deepEqual(parse(body), body);
  }
  assert.equal(parse({ model: 'm', input: 'x', encoding_format: 'float' }).encoding_format, 'float');
  // A vendor's own format and a harmless `stream: false` go through.
  assert.equal(parse({ model: 'm', input: 'x', encoding_format: 'int8' }).encoding_format, 'int8');
  assert.equal(parse({ model: 'm', input: 'x', stream: false }).stream, false);
  // null, as OpenAI takes it for any optional field.
  assert.equal(parse({ model: 'm', input: 'x', encoding_format: null, dimensions: null }).encoding_format, null);
});

test('refusals name their field', () => {
  assert.equal(refused('{nope').code, 'invalid_json');
  assert.deepEqual([refused([1]).code, refused([1]).param], ['invalid_request', null]);
  assert.equal(refused({ input: 'x' }).param, 'model');
  assert.equal(refused({ model: '', input: 'x' }).param, 'model');
  assert.equal(refused({ model: 'm'.repeat(513), input: 'x' }).param, 'model');
  for (const input of [undefined, null, 5, [], [1, 'a'], [[1], []], [[1], 'a'], [1.5], { text: 'x' }]) {
    assert.equal(refused({ model: 'm', input }).param, 'input', JSON.stringify(input));
  }
  assert.equal(refused({ model: 'm', input: 'x', encoding_format: 5 }).param, 'encoding_format');
  assert.equal(refused({ model: 'm', input: 'x', stream: true }).param, 'stream');
});
