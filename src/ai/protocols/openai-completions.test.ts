import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseCompletionsRequest, textCompletionAsChunks } from './openai-completions.ts';
import { refusedParam } from '../../../test/harness/refused-param.ts';

const parse = (body: unknown) => parseCompletionsRequest(Buffer.from(JSON.stringify(body)));

const refused = (body: unknown) => refusedParam(parseCompletionsRequest, body);

test('every prompt form OpenAI takes is accepted, with unchecked fields kept', () => {
  for (const prompt of ['', 'text', ['a', 'b'], [1, 2, 3], [[1, 2], [3]]]) {
    const body = { model: 'm', prompt, suffix: 's', echo: false, logprobs: 2, stream: true, stream_options: { include_usage: true }, vendor: { x: 1 } };
    assert.deepEqual(parse(body), body);
  }
});

test('null stream and stream_options are accepted as OpenAI takes them (an explicit None)', () => {
  assert.equal(parse({ model: 'm', prompt: 'x', stream: null, stream_options: null }).stream, null);
});

test('refusals name their field', () => {
  assert.equal(refused({ prompt: 'x' }), 'model');
  for (const prompt of [undefined, null, 5, [], [1, 'a'], [[1], 'a'], [1.5], { text: 'x' }]) assert.equal(refused({ model: 'm', prompt }), 'prompt', JSON.stringify(prompt));
  assert.equal(refused({ model: 'm', prompt: 'x', stream: 1 }), 'stream');
  assert.equal(refused({ model: 'm', prompt: 'x', stream_options: 'on' }), 'stream_options');
});

test('a whole text_completion as its stream: texts, finish reasons, then usage', () => {
  const chunks = textCompletionAsChunks({
    id: 'cmpl-1',
    object: 'text_completion',
    created: 5,
    model: 'up',
    choices: [
      { index: 0, text: 'one', logprobs: null, finish_reason: 'length' },
      { text: 'two', finish_reason: null },
    ],
    usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
  })!;
  assert.equal(chunks.length, 3);
  assert.deepEqual(chunks[0], {
    object: 'text_completion', id: 'cmpl-1', created: 5, model: 'up',
    choices: [
      { index: 0, text: 'one', logprobs: null, finish_reason: null },
      { index: 1, text: 'two', finish_reason: null },
    ],
  });
  assert.deepEqual((chunks[1].choices as object[]).map((c: any) => [c.index, c.text, c.finish_reason]), [[0, '', 'length'], [1, '', 'stop']]);
  assert.deepEqual(chunks[2].choices, []);
  assert.deepEqual(chunks[2].usage, { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 });
  assert.equal(textCompletionAsChunks({ object: 'list', data: [] }), undefined);
  assert.equal(textCompletionAsChunks({ choices: [] })!.length, 2);
});
