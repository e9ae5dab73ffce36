import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import Anthropic from '@anthropic-ai/sdk';
import { SseLineSplitter } from '../../lib/sse-lines.ts';
import { AnthropicMessagesStreamRelay } from './anthropic-messages-stream.ts';
import { readAnthropicError } from './anthropic-messages.ts';

const fixture = (name: string): string => readFileSync(new URL(`./__fixtures__/${name}`, import.meta.url), 'utf8');
const FIXTURES = ['anthropic-text.sse', 'anthropic-thinking-tool.sse', 'anthropic-error.sse'];

/** Relay `text` cut into two pieces at byte `cut`, through the SSE line splitter. */
function relay(text: string, cut: number, alias = 'fast'): { out: string; relay: AnthropicMessagesStreamRelay } {
  const bytes = Buffer.from(text);
  const r = new AnthropicMessagesStreamRelay(alias);
  const split = new SseLineSplitter();
  let out = '';
  for (const part of [bytes.subarray(0, cut), bytes.subarray(cut)]) split.push(part, (l) => (out += r.line(l)));
  assert.equal(split.flush(), '');
  return { out, relay: r };
}

/** Every line but message_start's data is byte-identical; that one differs only in `message.model`. */
function assertOnlyModelRewritten(input: string, out: string, alias: string): void {
  const a = input.split('\n');
  const b = out.split('\n');
  assert.equal(b.length, a.length);
  let rewritten = 0;
  for (let i = 0; i < a.length; i++) {
    if (a[i] === b[i]) continue;
    assert.ok(a[i].startsWith('data: {"type":"message_start"'), `line ${i} changed: ${b[i]}`);
    const was = JSON.parse(a[i].slice(6));
    const now = JSON.parse(b[i].slice(6));
    assert.equal(now.message.model, alias);
    was.message.model = alias;
    assert.deepEqual(now, was);
    rewritten++;
  }
  assert.equal(rewritten, 1);
}

test('every recorded stream relays byte-identical apart from the alias, at every chunk boundary', () => {
  for (const name of FIXTURES) {
    const text = fixture(name);
    const n = Buffer.byteLength(text);
    for (let cut = 0; cut <= n; cut++) {
      const { out } = relay(text, cut);
      assertOnlyModelRewritten(text, out, 'fast');
    }
    // And one byte at a time: every boundary in one stream.
    const r = new AnthropicMessagesStreamRelay('fast');
    const split = new SseLineSplitter();
    let out = '';
    const bytes = Buffer.from(text);
    for (let i = 0; i < bytes.length; i++) split.push(bytes.subarray(i, i + 1), (l) => (out += r.line(l)));
    assertOnlyModelRewritten(text, out, 'fast');
  }
});

test('usage, stop reason and end are tapped at every chunk boundary', () => {
  const text = fixture('anthropic-text.sse');
  for (let cut = 0; cut <= Buffer.byteLength(text); cut += 3) {
    const { relay: r } = relay(text, cut);
    // message_start said output 2; message_delta's 17 is the latest and wins.
    assert.deepEqual(r.usage, {
      prompt_tokens: 21, completion_tokens: 17, total_tokens: 38,
      prompt_tokens_details: { cached_tokens: 0, cache_creation_tokens: 0 },
    });
    assert.equal(r.sawStop, true);
    assert.equal(r.sawStopReason, true);
    assert.equal(r.inBandError, undefined);
  }
});

test('cache reads and writes from message_start and message_delta count as prompt tokens', () => {
  const { relay: r } = relay(fixture('anthropic-thinking-tool.sse'), 100);
  assert.deepEqual(r.usage, {
    prompt_tokens: 9512, completion_tokens: 89, total_tokens: 9601,
    prompt_tokens_details: { cached_tokens: 8000, cache_creation_tokens: 1500 },
  });
});

test('an in-band error is remembered, the stream is neither stopped nor finished, prompt usage is kept', () => {
  const { out, relay: r } = relay(fixture('anthropic-error.sse'), 57);
  assert.ok(out.includes('event: error\ndata: {"type":"error"'));
  assert.deepEqual(readAnthropicError(r.inBandError!), { type: 'overloaded_error', message: 'Overloaded' });
  assert.equal(r.sawStop, false);
  assert.equal(r.sawStopReason, false);
  assert.equal(r.usage?.prompt_tokens, 9);
  assert.equal(r.usage?.completion_tokens, 1);
});

test('no usage before any usage-bearing frame', () => {
  const r = new AnthropicMessagesStreamRelay('fast');
  r.line('event: ping');
  r.line('data: {"type": "ping"}');
  assert.equal(r.usage, undefined);
});

test('frames without event lines are recognised by their type', () => {
  const r = new AnthropicMessagesStreamRelay('fast');
  const start = r.line('data: {"type":"message_start","message":{"id":"msg_1","model":"claude-x","usage":{"input_tokens":4,"output_tokens":1}}}');
  assert.equal(JSON.parse(start.slice(6)).message.model, 'fast');
  const delta = 'data: {"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":9}}';
  assert.equal(r.line(delta), delta + '\n');
  assert.equal(r.line(''), '\n');
  r.line('data: {"type":"message_stop"}');
  assert.equal(r.sawStopReason, true);
  assert.equal(r.sawStop, true);
  assert.deepEqual(r.usage, { prompt_tokens: 4, completion_tokens: 9, total_tokens: 13 });
  const err = 'data: {"type":"error","error":{"type":"api_error","message":"Internal server error"}}';
  assert.equal(r.line(err), err + '\n');
  assert.equal(r.inBandError, err.slice(6));
});

test('a message_delta without a stop reason does not count as one; comments and unknown events pass through', () => {
  const r = new AnthropicMessagesStreamRelay('fast');
  for (const l of [': keep-alive', 'event: future_event', 'data: {"type":"future_event","model":"claude"}', '', 'event: message_delta', 'data: {"type":"message_delta","delta":{"stop_reason":null},"usage":{"output_tokens":3}}']) {
    assert.equal(r.line(l), l + '\n');
  }
  assert.equal(r.sawStopReason, false);
  assert.equal(r.usage?.completion_tokens, 3);
});

test('the official SDK reads the relayed stream and sees the alias', async () => {
  const { out } = relay(fixture('anthropic-thinking-tool.sse'), 321, 'team-claude');
  const client = new Anthropic({
    apiKey: 'test',
    baseURL: 'http://gateway.invalid',
    maxRetries: 0,
    fetch: async () => new Response(out, { status: 200, headers: { 'content-type': 'text/event-stream' } }),
  });
  const msg = await client.messages.stream({ model: 'team-claude', max_tokens: 64, messages: [{ role: 'user', content: 'weather?' }] }).finalMessage();
  assert.equal(msg.model, 'team-claude');
  assert.equal(msg.stop_reason, 'tool_use');
  assert.deepEqual(msg.content.map((b) => b.type), ['thinking', 'text', 'tool_use']);
  assert.deepEqual((msg.content[2] as { input: unknown }).input, { location: 'Paris, FR', unit: 'celsius' });
  assert.equal(msg.usage.output_tokens, 89);
});
