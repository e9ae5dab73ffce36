import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseSpeechRequest } from './openai-speech.ts';
import { refusedParam } from '../../../test/harness/refused-param.ts';

const parse = (body: unknown) => parseSpeechRequest(Buffer.from(JSON.stringify(body)));
const refused = (body: unknown) => refusedParam(parseSpeechRequest, body);

test('a voice by name or as an object; every other field kept', () => {
  const body = { model: 'm', input: 'hi', voice: 'alloy', response_format: 'opus', speed: 1.25, instructions: 'calm', stream_format: 'sse' };
  assert.deepEqual(parse(body), body);
  assert.deepEqual(parse({ model: 'm', input: 'hi', voice: { id: 'voice_123' } }).voice, { id: 'voice_123' });
});

test('refusals name their field', () => {
  assert.equal(refused({ input: 'hi', voice: 'alloy' }), 'model');
  for (const input of [undefined, '', 5, ['hi']]) assert.equal(refused({ model: 'm', input, voice: 'alloy' }), 'input');
  for (const voice of [undefined, '', null, 3, ['alloy']]) assert.equal(refused({ model: 'm', input: 'hi', voice }), 'voice');
});
