import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import Anthropic from '@anthropic-ai/sdk';
import { ChatToMessagesStream } from './anthropic-bridge-stream.ts';

type Chunk = Record<string, unknown>;
const chunks = (name: string): Chunk[] => JSON.parse(readFileSync(new URL(`./__fixtures__/${name}`, import.meta.url), 'utf8')) as Chunk[];

/** Encode every chunk, then end(); returns the pieces written (one per call). */
function encode(list: Chunk[], alias = 'fast'): { pieces: string[]; enc: ChatToMessagesStream } {
  const enc = new ChatToMessagesStream(alias);
  const pieces = list.map((c) => enc.push(c));
  pieces.push(enc.end());
  return { pieces, enc };
}

interface Ev {
  event: string;
  data: Record<string, any>;
}

/** Split SSE text into events, checking the exact `event: <name>\ndata: <json>\n\n` framing. */
function events(text: string): Ev[] {
  assert.ok(text.endsWith('\n\n'));
  return text.slice(0, -2).split('\n\n').map((frame) => {
    const m = /^event: ([a-z_]+)\ndata: (\{.*\})$/.exec(frame);
    assert.ok(m, `bad frame ${JSON.stringify(frame)}`);
    const data = JSON.parse(m[2]) as Record<string, any>;
    assert.equal(data.type, m[1]);
    return { event: m[1], data };
  });
}

const summary = (evs: Ev[]): string[] =>
  evs.map((e) => {
    if (e.event === 'content_block_start') return `start ${e.data.index} ${e.data.content_block.type}`;
    if (e.event === 'content_block_delta') return `delta ${e.data.index} ${e.data.delta.type}`;
    if (e.event === 'content_block_stop') return `stop ${e.data.index}`;
    return e.event;
  });

/** The official SDK's stream accumulator, fed the pieces exactly as the gateway would write them. */
async function sdkFinalMessage(pieces: string[]): Promise<Anthropic.Message> {
  const client = new Anthropic({
    apiKey: 'test',
    baseURL: 'http://gateway.invalid',
    maxRetries: 0,
    fetch: async () => {
      const enc = new TextEncoder();
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          for (const p of pieces) if (p.length > 0) controller.enqueue(enc.encode(p));
          controller.close();
        },
      });
      return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
    },
  });
  return client.messages.stream({ model: 'fast', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }).finalMessage();
}

test('text: message_start on the first chunk, one text block, usage in message_delta', async () => {
  const { pieces, enc } = encode(chunks('chat-chunks-text.json'));
  const evs = events(pieces.join(''));
  assert.deepEqual(summary(evs), [
    'message_start', 'start 0 text', 'delta 0 text_delta', 'delta 0 text_delta', 'stop 0', 'message_delta', 'message_stop',
  ]);
  assert.deepEqual(evs[0].data.message, {
    id: 'msg_chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT', type: 'message', role: 'assistant', model: 'fast', content: [],
    stop_reason: null, stop_sequence: null, usage: { input_tokens: 0, output_tokens: 0 },
  });
  // The first push writes message_start only (its content is ''); the finish chunk writes nothing.
  assert.deepEqual(summary(events(pieces[0])), ['message_start']);
  assert.equal(pieces[3], '');
  assert.equal(pieces[4], '');
  assert.deepEqual(evs[5].data, {
    type: 'message_delta',
    delta: { stop_reason: 'end_turn', stop_sequence: null },
    usage: { input_tokens: 99, output_tokens: 6, cache_read_input_tokens: 1920, output_tokens_details: { thinking_tokens: 0 } },
  });
  assert.equal(enc.finished, true);
  assert.equal(enc.usage?.prompt_tokens, 2019);

  const msg = await sdkFinalMessage(pieces);
  assert.equal(msg.model, 'fast');
  assert.deepEqual(msg.content, [{ type: 'text', text: 'Hello, wörld! 👋' }]);
  assert.equal(msg.stop_reason, 'end_turn');
  assert.equal(msg.usage.input_tokens, 99);
  assert.equal(msg.usage.output_tokens, 6);
  assert.equal(msg.usage.cache_read_input_tokens, 1920);
});

test('tool calls: one tool_use block per call index, argument fragments as input_json_delta', async () => {
  const { pieces } = encode(chunks('chat-chunks-tools.json'));
  const evs = events(pieces.join(''));
  assert.deepEqual(summary(evs), [
    'message_start',
    'start 0 tool_use', 'delta 0 input_json_delta', 'delta 0 input_json_delta', 'stop 0',
    'start 1 tool_use', 'delta 1 input_json_delta', 'delta 1 input_json_delta', 'stop 1',
    'message_delta', 'message_stop',
  ]);
  assert.deepEqual(evs[1].data.content_block, { type: 'tool_use', id: 'call_DdmO9pD3xa9XTPNJ32zg2hcA', name: 'get_weather', input: {} });
  assert.deepEqual(evs.filter((e) => e.event === 'content_block_delta').map((e) => e.data.delta.partial_json), [
    '{"lo', 'cation":"Paris"}', '{"tz":', '"Europe/Paris"}',
  ]);
  const msg = await sdkFinalMessage(pieces);
  assert.equal(msg.stop_reason, 'tool_use');
  assert.deepEqual(msg.content, [
    { type: 'tool_use', id: 'call_DdmO9pD3xa9XTPNJ32zg2hcA', name: 'get_weather', input: { location: 'Paris' } },
    { type: 'tool_use', id: 'call_Zq0Tj1Ec2cZ7h8zN3uV4bW5y', name: 'get_time', input: { tz: 'Europe/Paris' } },
  ]);
  assert.equal(msg.usage.input_tokens, 82);
  assert.equal(msg.usage.output_tokens, 41);
});

test('reasoning then text: a thinking block closes before the text block', async () => {
  const { pieces, enc } = encode(chunks('chat-chunks-reasoning.json'));
  const evs = events(pieces.join(''));
  assert.deepEqual(summary(evs), [
    'message_start',
    'start 0 thinking', 'delta 0 thinking_delta', 'delta 0 thinking_delta', 'stop 0',
    'start 1 text', 'delta 1 text_delta', 'delta 1 text_delta', 'stop 1',
    'message_delta', 'message_stop',
  ]);
  assert.deepEqual(evs[1].data.content_block, { type: 'thinking', thinking: '', signature: '' });
  assert.deepEqual(enc.usage?.completion_tokens_details, { reasoning_tokens: 100 });
  const msg = await sdkFinalMessage(pieces);
  assert.deepEqual(msg.content, [
    { type: 'thinking', thinking: '9.11 vs 9.9: compare tenths, 9 > 1.', signature: '' },
    { type: 'text', text: '9.9 is larger.' },
  ]);
  assert.equal(msg.stop_reason, 'max_tokens');
  assert.equal(msg.usage.input_tokens, 17);
  assert.equal(msg.usage.output_tokens, 120);
});

test('usage known before the first chunk is put in message_start', () => {
  const enc = new ChatToMessagesStream('fast');
  const first = enc.push({ id: 'c', choices: [{ index: 0, delta: { content: 'x' } }], usage: { prompt_tokens: 30, completion_tokens: 1, prompt_tokens_details: { cached_tokens: 10 } } });
  const start = events(first)[0].data;
  assert.deepEqual(start.message.usage, { input_tokens: 20, output_tokens: 0, cache_read_input_tokens: 10 });
});

test('an unfinished upstream gets no closing frames; the encoder writes nothing after end', () => {
  const enc = new ChatToMessagesStream('fast');
  enc.push({ id: 'c', choices: [{ index: 0, delta: { content: 'half' }, finish_reason: null }] });
  assert.equal(enc.finished, false);
  assert.equal(enc.end(), '');
  enc.push({ id: 'c', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
  assert.equal(enc.finished, true);
  assert.notEqual(enc.end(), '');
  assert.equal(enc.end(), '');
  assert.equal(enc.push({ id: 'c', choices: [{ index: 0, delta: { content: 'late' } }] }), '');
});

test('a text block after a tool call opens a new block; other choices are ignored; ids are generated when missing', () => {
  const enc = new ChatToMessagesStream('fast');
  let out = enc.push({ id: 'msg_x', choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { name: 'f', arguments: '{}' } }] } }] });
  out += enc.push({ id: 'msg_x', choices: [{ index: 1, delta: { content: 'other choice' } }, { index: 0, delta: { content: 'after' }, finish_reason: 'stop' }] });
  out += enc.end();
  const evs = events(out);
  assert.equal(evs[0].data.message.id, 'msg_x');
  assert.deepEqual(summary(evs), ['message_start', 'start 0 tool_use', 'delta 0 input_json_delta', 'stop 0', 'start 1 text', 'delta 1 text_delta', 'stop 1', 'message_delta', 'message_stop']);
  assert.match(evs[1].data.content_block.id, /^toolu_/);
  assert.equal(evs[5].data.delta.text, 'after');
});

test('a late fragment of an earlier tool call names that call\'s block', () => {
  const enc = new ChatToMessagesStream('fast');
  let out = enc.push({ id: 'c', choices: [{ index: 0, delta: { tool_calls: [
    { index: 0, id: 'a', function: { name: 'f', arguments: '{"x"' } },
    { index: 1, id: 'b', function: { name: 'g', arguments: '{}' } },
  ] } }] });
  out += enc.push({ id: 'c', choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: ':1}' } }] } }] });
  const late = events(out).at(-1)!;
  assert.equal(late.data.index, 0);
  assert.equal(late.data.delta.partial_json, ':1}');
});
