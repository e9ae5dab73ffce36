import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileOpenAIResponseOptions, liftReasoning, liftReasoningText } from './openai-response-options.ts';

test('nothing to do compiles to nothing: the default reading of upstream answers', () => {
  assert.equal(compileOpenAIResponseOptions(undefined), undefined);
  assert.equal(compileOpenAIResponseOptions({ stream_done_marker: 'optional' }), undefined);
  assert.equal(compileOpenAIResponseOptions({ reasoning_field: 'reasoning_content' }), undefined);
  assert.equal(compileOpenAIResponseOptions({ reasoning_field: 'delta.reasoning_content' }), undefined);
  assert.equal(compileOpenAIResponseOptions({ stream_done_marker: 'required' })?.doneMarker, 'required');
});

test('reasoning_field: a name, or a path after delta. / message., copied into reasoning_content when absent', () => {
  for (const field of ['reasoning', 'delta.reasoning', 'message.reasoning']) {
    const o = compileOpenAIResponseOptions({ reasoning_field: field })!;
    assert.deepEqual(o.reasoningPath, ['reasoning']);
    const chunk = { choices: [{ delta: { reasoning: 'think' } }, { delta: { reasoning: 'x', reasoning_content: 'own' } }, { delta: {} }] };
    assert.equal(liftReasoning(chunk, o.reasoningPath!, 'delta'), true);
    assert.deepEqual(chunk.choices, [{ delta: { reasoning: 'think', reasoning_content: 'think' } }, { delta: { reasoning: 'x', reasoning_content: 'own' } }, { delta: {} }]);
  }
  const nested = compileOpenAIResponseOptions({ reasoning_field: 'thinking.text' })!;
  const text = JSON.stringify({ choices: [{ message: { content: 'a', thinking: { text: 'deep' } } }] });
  assert.equal(JSON.parse(liftReasoningText(text, nested, 'message')).choices[0].message.reasoning_content, 'deep');
  // A text without the field is returned as is, unparsed.
  const plain = '{"choices":[{"message":{"content":"a"}}]}';
  assert.equal(liftReasoningText(plain, nested, 'message'), plain);
});
