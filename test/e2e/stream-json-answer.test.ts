// E2E: a caller asks for a stream and the upstream ignores it, answering 200 with one JSON
// completion. The caller still gets a stream in its own protocol (docs/errors.md "Streams"),
// synthesised from that answer, and the usage event has the answer's tokens. Every (caller SDK ×
// upstream family) pair, native and translated; an unreadable answer is a 502 before any stream.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type OpenAI from 'openai';
import type Anthropic from '@anthropic-ai/sdk';
import type { Gateway } from '../harness/spawn.ts';
import type { MockUpstream, RecordedRequest, Reply } from '../harness/mock-upstream.ts';
import { anthropicJson, familyOf, openAIJson, type Family, type Turn } from '../harness/provider-wire.ts';
import { usageOf } from '../harness/echo-upstream.ts';
import { modelFor, useTwoFamilyFixture } from '../harness/two-families.ts';

const CALLER_KEY = 'sk-e2e-streamjson-caller-77a1';

let mock: MockUpstream;
let gw: Gateway;
let openai: OpenAI;
let anthropic: Anthropic;

useTwoFamilyFixture({ callerKey: CALLER_KEY, upstreamKey: 'sk-upstream-streamjson', ready: (fx) => ({ mock, gw, openai, anthropic } = fx) });


/** The upstream answers `t` as one JSON document whatever the request asked for. */
function jsonAnyway(t: Turn): (req: RecordedRequest) => Reply {
  return (req) => {
    const model = typeof req.json?.model === 'string' ? req.json.model : 'upstream-model';
    return { json: familyOf(req) === 'anthropic' ? anthropicJson(t, model) : openAIJson(t, model) };
  };
}

const TEXT_TURN: Turn = { text: 'The answer is forty-two.', usage: { input: 20, output: 9 } };
const TOOL_TURN: Turn = { text: 'Checking.', toolCalls: [{ id: 'toolu_sj01', name: 'get_weather', input: { city: 'Paris' } }], usage: { input: 30, output: 12 } };
const THINKING_TURN: Turn = { reasoning: 'Let me think.', text: 'Done.', usage: { input: 15, output: 25 } };
const TOOLS = [{ type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];

interface OpenAISeen {
  text: string;
  reasoning: string;
  toolCalls: Array<{ id: string; name: string; args: string }>;
  finish: string;
  models: Set<string>;
  usageChunks: any[];
  requestId: string | null;
}

async function openAIStream(model: string, includeUsage: boolean, tools = false): Promise<OpenAISeen> {
  const params: any = { model, messages: [{ role: 'user', content: 'hi' }], stream: true };
  if (includeUsage) params.stream_options = { include_usage: true };
  if (tools) params.tools = TOOLS;
  const { data: stream, response } = await openai.chat.completions.create(params).withResponse();
  assert.match(response.headers.get('content-type') ?? '', /^text\/event-stream/);
  const seen: OpenAISeen = { text: '', reasoning: '', toolCalls: [], finish: '', models: new Set(), usageChunks: [], requestId: response.headers.get('x-tollgate-request-id') };
  for await (const chunk of stream as any) {
    seen.models.add(chunk.model);
    if (chunk.usage) seen.usageChunks.push(chunk);
    const c = chunk.choices[0];
    if (c === undefined) continue;
    seen.text += c.delta.content ?? '';
    seen.reasoning += c.delta.reasoning_content ?? '';
    for (const tc of c.delta.tool_calls ?? []) {
      seen.toolCalls[tc.index] ??= { id: '', name: '', args: '' };
      const slot = seen.toolCalls[tc.index];
      if (tc.id) slot.id = tc.id;
      if (tc.function?.name) slot.name = tc.function.name;
      slot.args += tc.function?.arguments ?? '';
    }
    if (c.finish_reason) seen.finish = c.finish_reason;
  }
  return seen;
}

async function anthropicStream(model: string, tools = false): Promise<{ msg: any; requestId: string | null }> {
  const params: any = { model, max_tokens: 256, messages: [{ role: 'user', content: 'hi' }] };
  if (tools) params.tools = [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }];
  const stream = anthropic.messages.stream(params);
  const { response } = await stream.withResponse();
  assert.match(response.headers.get('content-type') ?? '', /^text\/event-stream/);
  return { msg: await stream.finalMessage(), requestId: response.headers.get('x-tollgate-request-id') };
}

async function assertUsage(requestId: string | null, prompt: number, completion: number): Promise<void> {
  const row = await usageOf(gw, requestId);
  assert.equal(row.status, 200);
  assert.equal(row.error_class, null);
  assert.equal(row.stream, true);
  assert.equal(row.prompt_tokens, prompt);
  assert.equal(row.completion_tokens, completion);
}

for (const family of ['openai', 'anthropic'] as Family[]) {
  describe(`upstream (${family}) answers JSON to a stream request`, () => {
    it('openai SDK: the content, finish reason and usage chunk arrive as a stream with the alias', async () => {
      mock.setFallback(jsonAnyway(TEXT_TURN));
      const seen = await openAIStream(modelFor(family), true);
      assert.equal(mock.requests.at(-1)!.json.stream, true);
      assert.equal(seen.text, TEXT_TURN.text);
      assert.equal(seen.finish, 'stop');
      assert.deepEqual([...seen.models], [modelFor(family)]);
      assert.equal(seen.usageChunks.length, 1);
      assert.equal(seen.usageChunks[0].usage.prompt_tokens, 20);
      assert.equal(seen.usageChunks[0].usage.completion_tokens, 9);
      await assertUsage(seen.requestId, 20, 9);
    });

    it('openai SDK without include_usage: no usage chunk, the usage event still has the tokens', async () => {
      mock.setFallback(jsonAnyway(TEXT_TURN));
      const seen = await openAIStream(modelFor(family), false);
      assert.equal(seen.text, TEXT_TURN.text);
      assert.equal(seen.usageChunks.length, 0);
      await assertUsage(seen.requestId, 20, 9);
    });

    it('openai SDK: tool calls and reasoning are streamed whole', async () => {
      mock.setFallback(jsonAnyway(TOOL_TURN));
      const tools = await openAIStream(modelFor(family), true, true);
      assert.equal(tools.text, 'Checking.');
      assert.equal(tools.finish, 'tool_calls');
      assert.deepEqual(tools.toolCalls.map((c) => ({ id: c.id, name: c.name, input: JSON.parse(c.args) })), [{ id: 'toolu_sj01', name: 'get_weather', input: { city: 'Paris' } }]);
      mock.setFallback(jsonAnyway(THINKING_TURN));
      const thinking = await openAIStream(modelFor(family), true);
      assert.equal(thinking.reasoning, 'Let me think.');
      assert.equal(thinking.text, 'Done.');
    });

    it('anthropic SDK: the message (text, tool use, thinking) and its usage arrive as a Messages stream', async () => {
      mock.setFallback(jsonAnyway(TOOL_TURN));
      const { msg, requestId } = await anthropicStream(modelFor(family), true);
      assert.equal(msg.model, modelFor(family));
      assert.equal(msg.stop_reason, 'tool_use');
      assert.deepEqual(msg.content.map((b: any) => b.type), ['text', 'tool_use']);
      assert.equal(msg.content[0].text, 'Checking.');
      assert.deepEqual({ id: msg.content[1].id, name: msg.content[1].name, input: msg.content[1].input }, { id: 'toolu_sj01', name: 'get_weather', input: { city: 'Paris' } });
      assert.equal(msg.usage.output_tokens, 12);
      await assertUsage(requestId, 30, 12);
      mock.setFallback(jsonAnyway(THINKING_TURN));
      const thinking = (await anthropicStream(modelFor(family))).msg;
      assert.equal(thinking.content[0].type, 'thinking');
      assert.equal(thinking.content[0].thinking, 'Let me think.');
      // Native: the signature the caller must send back with the thinking block is kept.
      if (family === 'anthropic') assert.equal(thinking.content[0].signature, 'sig-wire');
      assert.equal(thinking.content[1].text, 'Done.');
    });

    it('an answer that is not a completion is a 502 upstream_decode, not a stream', async () => {
      mock.setFallback({ headers: { 'content-type': 'application/json' }, body: '{"not": "a completion"' });
      await assert.rejects(openAIStream(modelFor(family), true), (e: any) => {
        assert.equal(e.status, 502, String(e));
        assert.equal(e.error?.code, 'upstream_decode');
        return true;
      });
      mock.setFallback({ json: { unrelated: true } });
      await assert.rejects(anthropicStream(modelFor(family)), (e: any) => {
        assert.equal(e.status, 502, String(e));
        return true;
      });
    });
  });
}
