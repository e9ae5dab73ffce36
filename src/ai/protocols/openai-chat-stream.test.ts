import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SseLineSplitter } from '../../lib/sse-lines.ts';
import { OpenAIChatStreamDecoder, OpenAIChatStreamRelay } from './openai-chat-stream.ts';
import { compileOpenAIResponseOptions } from './openai-response-options.ts';

const chunk = (o: object): string => `data: ${JSON.stringify(o)}\n\n`;
const base = { id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-2024-08-06' };
const upstream =
  chunk({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }], usage: null }) +
  chunk({ ...base, choices: [{ index: 0, delta: { content: 'hé "model":"x"' }, finish_reason: null }], usage: null }) +
  chunk({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: null }) +
  chunk({ ...base, choices: [], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } }) +
  'data: [DONE]\n\n';

function relayAtEveryBoundary(dropUsage: boolean, check: (out: string, relay: OpenAIChatStreamRelay) => void): void {
  const bytes = Buffer.from(upstream);
  for (let cut = 1; cut < bytes.length; cut += 7) {
    const relay = new OpenAIChatStreamRelay('fast', dropUsage);
    const split = new SseLineSplitter();
    let out = '';
    for (const part of [bytes.subarray(0, cut), bytes.subarray(cut)]) split.push(part, (l) => (out += relay.line(l)));
    check(out, relay);
  }
}

function events(out: string): string[] {
  return out.split('\n\n').filter((e) => e.length > 0).map((e) => e.replace(/^data: /, ''));
}

test('every chunk carries the alias; content and order survive; usage is tapped', () => {
  relayAtEveryBoundary(false, (out, relay) => {
    const ev = events(out);
    assert.equal(ev.length, 5);
    assert.equal(ev[4], '[DONE]');
    for (const e of ev.slice(0, 4)) assert.equal(JSON.parse(e).model, 'fast');
    assert.equal(JSON.parse(ev[1]).choices[0].delta.content, 'hé "model":"x"');
    assert.deepEqual(relay.usage, { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 });
    assert.equal(relay.sawDone, true);
    assert.equal(relay.sawFinish, true);
  });
});

test('the usage-only chunk is dropped when the caller did not ask, but still tapped', () => {
  relayAtEveryBoundary(true, (out, relay) => {
    const ev = events(out);
    assert.equal(ev.length, 4);
    assert.ok(ev.every((e) => e === '[DONE]' || JSON.parse(e).choices.length === 1));
    assert.equal(relay.usage?.total_tokens, 7);
  });
});

test('in-band errors are relayed and remembered', () => {
  const relay = new OpenAIChatStreamRelay('fast', false);
  const line = 'data: {"error":{"message":"overloaded","type":"server_error"}}';
  assert.equal(relay.line(line), line + '\n');
  assert.ok(relay.inBandError?.includes('overloaded'));
});

test('"error": null (or false, "") on a healthy chunk is no in-band error, relayed or decoded', () => {
  const relay = new OpenAIChatStreamRelay('fast', false);
  for (const none of ['null', 'false', '""']) {
    relay.line(`data: {"error":${none},"choices":[{"index":0,"delta":{"content":"hi"}}]}`);
    assert.equal(relay.inBandError, undefined, none);
  }
  const decoder = new OpenAIChatStreamDecoder();
  const chunks = decoder.push({ event: undefined, data: '{"error":null,"choices":[{"index":0,"delta":{"content":"hi"}}]}' });
  assert.equal(decoder.error, undefined);
  assert.equal(chunks.length, 1);
});

test('the decoder: [DONE] after a finish reason finishes; [DONE] without one is a decode error', () => {
  const done = new OpenAIChatStreamDecoder();
  done.push({ event: undefined, data: JSON.stringify({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }) });
  done.push({ event: undefined, data: '[DONE]' });
  assert.equal(done.finished, true);
  assert.equal(done.error, undefined);
  const cut = new OpenAIChatStreamDecoder();
  cut.push({ event: undefined, data: JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: 'hi' }, finish_reason: null }] }) });
  cut.push({ event: undefined, data: '[DONE]' });
  assert.equal(cut.finished, false);
  assert.deepEqual(cut.error, { type: 'upstream_decode', message: 'upstream stream ended without a finish reason' });
});

test('the finish reason is seen with whitespace around the colon: such a stream without [DONE] is complete', () => {
  const relay = new OpenAIChatStreamRelay('fast', false);
  relay.line('data: {"id": "c1", "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": null}]}');
  assert.equal(relay.sawFinish, false);
  relay.line('data: {"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason" : "stop"}]}');
  assert.equal(relay.sawFinish, true);
});

test('non-data lines pass through', () => {
  const relay = new OpenAIChatStreamRelay('fast', false);
  assert.equal(relay.line(': keep-alive'), ': keep-alive\n');
  assert.equal(relay.line('event: message'), 'event: message\n');
});

test('stream_done_marker required: a stream without [DONE] is cut short even after its finish reason', () => {
  const finish = 'data: ' + JSON.stringify({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
  const required = compileOpenAIResponseOptions({ stream_done_marker: 'required' });
  for (const [options, complete] of [[undefined, true], [compileOpenAIResponseOptions({ stream_done_marker: 'none' }), true], [required, false]] as const) {
    const relay = new OpenAIChatStreamRelay('fast', false, options);
    relay.line(finish);
    assert.equal(relay.complete, complete, options?.doneMarker ?? 'default');
    relay.line('data: [DONE]');
    assert.equal(relay.complete, true);
    const decoder = new OpenAIChatStreamDecoder(options);
    decoder.push({ event: undefined, data: finish.slice(6) });
    assert.equal(decoder.complete() !== undefined, complete, options?.doneMarker ?? 'default');
  }
});

test('reasoning_field: the relay and the decoder copy the vendor field into delta.reasoning_content', () => {
  const options = compileOpenAIResponseOptions({ reasoning_field: 'reasoning' });
  const line = 'data: ' + JSON.stringify({ ...base, choices: [{ index: 0, delta: { reasoning: 'hmm' }, finish_reason: null }] });
  const relayed = JSON.parse(new OpenAIChatStreamRelay('fast', false, options).line(line).slice(6));
  assert.equal(relayed.model, 'fast');
  assert.deepEqual(relayed.choices[0].delta, { reasoning: 'hmm', reasoning_content: 'hmm' });
  const [decoded] = new OpenAIChatStreamDecoder(options).push({ event: undefined, data: line.slice(6) });
  assert.equal((decoded.choices as any)[0].delta.reasoning_content, 'hmm');
  // Without the option, the chunk goes through untouched.
  assert.equal(JSON.parse(new OpenAIChatStreamRelay('fast', false).line(line).slice(6)).choices[0].delta.reasoning_content, undefined);
});

test('a [DONE] before any choice is held back; after one (usage chunk included) it is relayed', () => {
  const empty = new OpenAIChatStreamRelay('alias', false);
  let out = '';
  for (const line of [`data: ${JSON.stringify({ ...base, choices: [] })}`, '', 'data: [DONE]', '']) out += empty.line(line);
  assert.equal(empty.emptyDone, true);
  assert.equal(empty.sawDone, false);
  assert.doesNotMatch(out, /\[DONE\]/);

  const answered = new OpenAIChatStreamRelay('alias', false);
  out = '';
  const lines = [
    `data: ${JSON.stringify({ ...base, choices: [] })}`,
    `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: 'hi' }, finish_reason: 'stop' }] })}`,
    `data: ${JSON.stringify({ ...base, choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } })}`,
    'data: [DONE]',
  ];
  for (const line of lines) out += answered.line(line) + answered.line('');
  assert.equal(answered.sawDone, true);
  assert.match(out, /\[DONE\]/);
});
