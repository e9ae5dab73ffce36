import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { SseEventAssembler, SseLineSplitter } from '../../../lib/sse-lines.ts';
import type { SseEvent } from '../contract.ts';
import { AnthropicStreamDecoder } from './stream.ts';
import { anthropicAdapter } from './index.ts';

const CREATED = 1_750_000_000;

function fixture(name: string): Buffer {
  return readFileSync(new URL(`./__fixtures__/${name}`, import.meta.url));
}

interface Decoded {
  chunks: Record<string, unknown>[];
  usage: unknown;
  finished: boolean;
  error: unknown;
}

/** Feed raw stream bytes, cut into `pieces`, through the real splitter, assembler and decoder. */
function decodePieces(pieces: Buffer[]): Decoded {
  const splitter = new SseLineSplitter();
  const assembler = new SseEventAssembler();
  const decoder = new AnthropicStreamDecoder(CREATED);
  const chunks: Record<string, unknown>[] = [];
  const onLine = (line: string): void => {
    const event = assembler.line(line);
    if (event !== undefined) chunks.push(...decoder.push(event));
  };
  for (const piece of pieces) splitter.push(piece, onLine);
  const rest = splitter.flush();
  if (rest !== '') onLine(rest);
  const last = assembler.end();
  if (last !== undefined) chunks.push(...decoder.push(last));
  return { chunks, usage: decoder.usage, finished: decoder.finished, error: decoder.error };
}

/** Decodes the fixture whole, split at every byte offset, and one byte at a time; all must agree. */
function decodeEveryWay(name: string): Decoded {
  const raw = fixture(name);
  const whole = decodePieces([raw]);
  for (let i = 1; i < raw.length; i++) {
    assert.deepEqual(decodePieces([raw.subarray(0, i), raw.subarray(i)]), whole, `${name} split at byte ${i}`);
  }
  const bytes: Buffer[] = [];
  for (let i = 0; i < raw.length; i++) bytes.push(raw.subarray(i, i + 1));
  assert.deepEqual(decodePieces(bytes), whole, `${name} one byte at a time`);
  return whole;
}

function chunk(id: string, model: string, delta: Record<string, unknown>, finish: string | null = null): Record<string, unknown> {
  return { id, object: 'chat.completion.chunk', created: CREATED, model, choices: [{ index: 0, delta, finish_reason: finish }] };
}

function usageChunk(id: string, model: string, usage: Record<string, unknown>): Record<string, unknown> {
  return { id, object: 'chat.completion.chunk', created: CREATED, model, choices: [], usage };
}

test('plain text stream: role chunk, text deltas (multi-byte text intact), finish, usage chunk', () => {
  const id = 'msg_01XFDUDYJgAACzvnptvVoYEL';
  const model = 'claude-sonnet-4-5-20250929';
  const usage = { prompt_tokens: 25, completion_tokens: 15, total_tokens: 40, prompt_tokens_details: { cached_tokens: 0, cache_creation_tokens: 0 } };
  const out = decodeEveryWay('text-stream.sse');
  assert.deepEqual(out.chunks, [
    chunk(id, model, { role: 'assistant', content: '' }),
    chunk(id, model, { content: 'Héllo' }),
    chunk(id, model, { content: ' wörld 🌍, ' }),
    chunk(id, model, { content: 'こんにちは!' }),
    chunk(id, model, {}, 'stop'),
    usageChunk(id, model, usage),
  ]);
  assert.equal(out.finished, true);
  assert.equal(out.error, undefined);
  assert.deepEqual(out.usage, usage);
});

test('tool-use stream: one tool call per tool_use block, indexed from 0, arguments as fragments', () => {
  const id = 'msg_014p7gG3wDgGV9EUtLvnow3U';
  const model = 'claude-sonnet-4-5-20250929';
  const out = decodeEveryWay('tool-use-stream.sse');
  assert.deepEqual(out.chunks, [
    chunk(id, model, { role: 'assistant', content: '' }),
    chunk(id, model, { content: "I'll check the weather" }),
    chunk(id, model, { content: ' and the time.' }),
    chunk(id, model, { tool_calls: [{ index: 0, id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
    chunk(id, model, { tool_calls: [{ index: 0, function: { arguments: '{"location": "San Fra' } }] }),
    chunk(id, model, { tool_calls: [{ index: 0, function: { arguments: 'ncisco, CA", "unit": "fah' } }] }),
    chunk(id, model, { tool_calls: [{ index: 0, function: { arguments: 'renheit"}' } }] }),
    chunk(id, model, { tool_calls: [{ index: 1, id: 'toolu_01Lm9hZb7cQx4v2Yd8Rk3PqW', type: 'function', function: { name: 'get_time', arguments: '' } }] }),
    chunk(id, model, { tool_calls: [{ index: 1, function: { arguments: '{"tz": "America/' } }] }),
    chunk(id, model, { tool_calls: [{ index: 1, function: { arguments: 'Los_Angeles"}' } }] }),
    chunk(id, model, {}, 'tool_calls'),
    usageChunk(id, model, { prompt_tokens: 472, completion_tokens: 89, total_tokens: 561, prompt_tokens_details: { cached_tokens: 0, cache_creation_tokens: 0 } }),
  ]);
  // The fragments of each call reassemble into its JSON arguments.
  const args = ['', ''];
  for (const c of out.chunks) {
    const calls = ((c.choices as Record<string, unknown>[])[0]?.delta as Record<string, unknown> | undefined)?.tool_calls as
      | { index: number; function: { arguments: string } }[]
      | undefined;
    for (const call of calls ?? []) args[call.index] += call.function.arguments;
  }
  assert.deepEqual(JSON.parse(args[0]), { location: 'San Francisco, CA', unit: 'fahrenheit' });
  assert.deepEqual(JSON.parse(args[1]), { tz: 'America/Los_Angeles' });
});

test('thinking stream: thinking deltas become reasoning_content, signatures are dropped', () => {
  const id = 'msg_01Dw8qJ5rTnUy2VbXcZa4MkE';
  const model = 'claude-opus-4-1-20250805';
  const out = decodeEveryWay('thinking-stream.sse');
  assert.deepEqual(out.chunks, [
    chunk(id, model, { role: 'assistant', content: '' }),
    chunk(id, model, { reasoning_content: 'The user wants 27 * 453.\n27 * 453 = 27 * 400 + 27 * 53' }),
    chunk(id, model, { reasoning_content: ' = 10800 + 1431 = 12231.' }),
    chunk(id, model, { content: '27 × 453 = **12,231**' }),
    chunk(id, model, {}, 'stop'),
    usageChunk(id, model, { prompt_tokens: 46, completion_tokens: 112, total_tokens: 158, prompt_tokens_details: { cached_tokens: 0, cache_creation_tokens: 0 } }),
  ]);
});

test('error event: sets error in the vendor words, emits nothing for it, never finishes', () => {
  const id = 'msg_01HcE6wqS9JmZ8uVr3TfYbNa';
  const model = 'claude-sonnet-4-5-20250929';
  const out = decodeEveryWay('error-stream.sse');
  assert.deepEqual(out.chunks, [chunk(id, model, { role: 'assistant', content: '' }), chunk(id, model, { content: 'Once upon' })]);
  assert.deepEqual(out.error, { type: 'overloaded_error', message: 'Overloaded', status: 502 });
  assert.equal(out.finished, false);
  // Input counts from message_start are still known for accounting.
  assert.deepEqual(out.usage, { prompt_tokens: 18, completion_tokens: 1, total_tokens: 19, prompt_tokens_details: { cached_tokens: 0, cache_creation_tokens: 0 } });
});

test('cache usage stream: prompt tokens add cache reads and writes; max_tokens finishes with length', () => {
  const id = 'msg_01Qa7nVb3WcXz5LpRt8YuKeM';
  const model = 'claude-sonnet-4-5-20250929';
  const usage = { prompt_tokens: 25812, completion_tokens: 16, total_tokens: 25828, prompt_tokens_details: { cached_tokens: 24000, cache_creation_tokens: 1800 } };
  const out = decodeEveryWay('cache-usage-stream.sse');
  assert.deepEqual(out.chunks.at(-2), chunk(id, model, {}, 'length'));
  assert.deepEqual(out.chunks.at(-1), usageChunk(id, model, usage));
  assert.deepEqual(out.usage, usage);
  assert.equal(out.finished, true);
});

const ev = (data: unknown, event?: string): SseEvent => ({ event, data: typeof data === 'string' ? data : JSON.stringify(data) });

test('usage: the latest value of each field wins across message_start and message_delta', () => {
  const d = new AnthropicStreamDecoder(CREATED);
  d.push(ev({ type: 'message_start', message: { id: 'm', model: 'x', usage: { input_tokens: 10, cache_read_input_tokens: 100, output_tokens: 1 } } }));
  assert.deepEqual(d.usage, { prompt_tokens: 110, completion_tokens: 1, total_tokens: 111, prompt_tokens_details: { cached_tokens: 100 } });
  // A relay that reports input only at the end, and nulls for fields it does not know.
  d.push(ev({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { input_tokens: 12, cache_read_input_tokens: null, cache_creation_input_tokens: 5, output_tokens: 30 } }));
  assert.deepEqual(d.usage, {
    prompt_tokens: 117,
    completion_tokens: 30,
    total_tokens: 147,
    prompt_tokens_details: { cached_tokens: 100, cache_creation_tokens: 5 },
  });
});

test('usage: output_tokens_details.thinking_tokens becomes reasoning_tokens', () => {
  const d = new AnthropicStreamDecoder(CREATED);
  d.push(ev({ type: 'message_start', message: { id: 'm', model: 'x', usage: { input_tokens: 10, output_tokens: 1 } } }));
  d.push(ev({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 50, output_tokens_details: { thinking_tokens: 20 } } }));
  assert.deepEqual(d.usage?.completion_tokens_details, { reasoning_tokens: 20 });
});

test('finish reasons of message_delta', () => {
  const cases: [string | null, string][] = [
    ['end_turn', 'stop'],
    ['stop_sequence', 'stop'],
    ['max_tokens', 'length'],
    ['tool_use', 'tool_calls'],
    ['refusal', 'content_filter'],
    ['pause_turn', 'stop'],
    ['model_context_window_exceeded', 'length'],
    [null, 'stop'],
    ['something_new', 'stop'],
  ];
  for (const [stop, finish] of cases) {
    const d = new AnthropicStreamDecoder(CREATED);
    const out = d.push(ev({ type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 1 } }));
    assert.equal((out[0].choices as Record<string, unknown>[])[0].finish_reason, finish, String(stop));
  }
});

test('data that is not JSON sets an upstream_decode error and stops decoding', () => {
  const d = new AnthropicStreamDecoder(CREATED);
  assert.deepEqual(d.push(ev('{"type":"message_start",', 'message_start')), []);
  assert.equal(d.error?.type, 'upstream_decode');
  assert.deepEqual(d.push(ev({ type: 'message_stop' })), []);
  assert.equal(d.finished, false);
});

test('ping, content_block_stop, signature deltas and unknown events emit nothing', () => {
  const d = new AnthropicStreamDecoder(CREATED);
  assert.deepEqual(d.push(ev({ type: 'ping' }, 'ping')), []);
  assert.deepEqual(d.push(ev({ type: 'content_block_stop', index: 0 })), []);
  assert.deepEqual(d.push(ev({ type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'abc' } })), []);
  assert.deepEqual(d.push(ev({ type: 'content_block_delta', index: 0, delta: { type: 'citations_delta', citation: {} } })), []);
  assert.deepEqual(d.push(ev({ type: 'brand_new_event', x: 1 }, 'brand_new_event')), []);
  assert.equal(d.error, undefined);
});

test('a tool call that closes without argument text gets "{}" (a call with no arguments), once', () => {
  const d = new AnthropicStreamDecoder(CREATED);
  d.push(ev({ type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_1', name: 'now', input: {} } }));
  assert.deepEqual(d.push(ev({ type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '' } })), []);
  const out = d.push(ev({ type: 'content_block_stop', index: 0 }));
  assert.equal(out.length, 1);
  const delta = (out[0].choices as Record<string, unknown>[])[0].delta as Record<string, unknown>;
  assert.deepEqual(delta.tool_calls, [{ index: 0, function: { arguments: '{}' } }]);
  assert.deepEqual(d.push(ev({ type: 'content_block_stop', index: 0 })), []);
  // A call whose arguments arrived is left as it is.
  d.push(ev({ type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_2', name: 'f', input: {} } }));
  d.push(ev({ type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"a":1}' } }));
  assert.deepEqual(d.push(ev({ type: 'content_block_stop', index: 1 })), []);
});

test('server tool blocks are not tool calls: their input deltas are ignored and do not shift indexes', () => {
  const d = new AnthropicStreamDecoder(CREATED);
  const out = [
    ...d.push(ev({ type: 'content_block_start', index: 0, content_block: { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: {} } })),
    ...d.push(ev({ type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"query":"x"}' } })),
    ...d.push(ev({ type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_1', name: 'f', input: {} } })),
  ];
  assert.equal(out.length, 1);
  const delta = (out[0].choices as Record<string, unknown>[])[0].delta as Record<string, unknown>;
  assert.equal((delta.tool_calls as Record<string, unknown>[])[0].index, 0);
});

test('events are recognised by their data type when the event line is missing', () => {
  const d = new AnthropicStreamDecoder(CREATED);
  const out = d.push(ev({ type: 'message_start', message: { id: 'msg_1', model: 'claude', usage: { input_tokens: 1 } } }));
  assert.deepEqual(out, [chunk('msg_1', 'claude', { role: 'assistant', content: '' })]);
});

test('message_stop without any usage finishes without a usage chunk', () => {
  const d = new AnthropicStreamDecoder(CREATED);
  d.push(ev({ type: 'message_delta', delta: { stop_reason: 'end_turn' } }, 'message_delta'));
  assert.deepEqual(d.push(ev({ type: 'message_stop' }, 'message_stop')), []);
  assert.equal(d.finished, true);
  assert.equal(d.usage, undefined);
});

test('message_stop without a stop reason is a decode error: the message never finished', () => {
  const d = new AnthropicStreamDecoder(CREATED);
  d.push(ev({ type: 'message_start', message: { id: 'msg_1', model: 'claude' } }, 'message_start'));
  assert.deepEqual(d.push(ev({ type: 'message_stop' }, 'message_stop')), []);
  assert.equal(d.finished, false);
  assert.deepEqual(d.error, { type: 'upstream_decode', message: 'upstream stream ended without a stop reason' });
});

test('the adapter creates a fresh decoder per stream', () => {
  const a = anthropicAdapter.translator!.createStreamDecoder();
  const b = anthropicAdapter.translator!.createStreamDecoder();
  a.push(ev({ type: 'message_delta', delta: { stop_reason: 'end_turn' } }));
  a.push(ev({ type: 'message_stop' }));
  assert.equal(a.finished, true);
  assert.equal(b.finished, false);
});
