// E2E: what the official `openai` and `@anthropic-ai/sdk` clients read from a response besides its
// body — request ids, retry hints, SDK stream helpers — against a spawned gateway in front of a
// mock upstream of either family. A user's SDK code must work unchanged behind the gateway.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import type { Gateway } from '../harness/spawn.ts';
import type { MockUpstream } from '../harness/mock-upstream.ts';
import { errorReplyFor, replyFor, type Family, type Turn } from '../harness/provider-wire.ts';
import { waitForLines } from '../harness/log-lines.ts';
import { modelFor, useTwoFamilyFixture } from '../harness/two-families.ts';

const CALLER_KEY = 'sk-e2e-sdkconf-caller-7d31';

let mock: MockUpstream;
let gw: Gateway;
let openai: OpenAI;
let anthropic: Anthropic;

useTwoFamilyFixture({ callerKey: CALLER_KEY, upstreamKey: 'sk-upstream-sdkconf', ready: (fx) => ({ mock, gw, openai, anthropic } = fx) });

const FAMILIES: Family[] = ['openai', 'anthropic'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TOOLS_TURN: Turn = {
  text: 'Checking both.',
  toolCalls: [
    { id: 'call_paris', name: 'get_weather', input: { city: 'Paris' } },
    { id: 'call_rome', name: 'get_weather', input: { city: 'Rome', unit: 'celsius' } },
  ],
};
const WEATHER = { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string' } }, required: ['city'] };

describe('request ids: the SDKs read the gateway request id from their own header', () => {
  for (const family of FAMILIES) {
    it(`openai SDK → ${family} upstream: _request_id, withResponse().request_id and error.requestID`, async () => {
      // The upstream's own id must not be taken for the gateway's: the caller quotes one id.
      mock.setFallback((req) => ({ ...replyFor({ text: 'hi' })(req), headers: { 'x-request-id': 'req_upstream_1', 'request-id': 'req_upstream_2' } }));
      const { data, response, request_id } = await openai.chat.completions.create({ model: modelFor(family), messages: [{ role: 'user', content: 'x' }] }).withResponse();
      const gatewayId = response.headers.get('x-tollgate-request-id');
      assert.match(String(gatewayId), UUID);
      assert.equal(request_id, gatewayId);
      assert.equal((data as { _request_id?: string | null })._request_id, gatewayId);

      const stream = await openai.chat.completions.create({ model: modelFor(family), messages: [{ role: 'user', content: 'x' }], stream: true }).withResponse();
      for await (const _ of stream.data) {
        // drain
      }
      assert.equal(stream.request_id, stream.response.headers.get('x-tollgate-request-id'));
      assert.match(String(stream.request_id), UUID);

      mock.setFallback(errorReplyFor(400, 'invalid_request_error', 'bad thing'));
      const err = await openai.chat.completions.create({ model: modelFor(family), messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
      assert.ok(err instanceof OpenAI.BadRequestError);
      assert.equal(err.requestID, err.headers?.get('x-tollgate-request-id'));
      assert.match(String(err.requestID), UUID);
      const line = await waitForLines(gw, 'access', (l) => l.request_id === err.requestID);
      assert.equal(line.length, 1, 'the id the SDK reports is the access log line of the request');
    });

    it(`anthropic SDK → ${family} upstream: _request_id, withResponse().request_id, stream and error.requestID`, async () => {
      mock.setFallback((req) => ({ ...replyFor({ text: 'hi' })(req), headers: { 'x-request-id': 'req_upstream_1', 'request-id': 'req_upstream_2' } }));
      const { data, response, request_id } = await anthropic.messages.create({ model: modelFor(family), max_tokens: 16, messages: [{ role: 'user', content: 'x' }] }).withResponse();
      const gatewayId = response.headers.get('x-tollgate-request-id');
      assert.match(String(gatewayId), UUID);
      assert.equal(request_id, gatewayId);
      assert.equal((data as { _request_id?: string | null })._request_id, gatewayId);

      const stream = anthropic.messages.stream({ model: modelFor(family), max_tokens: 16, messages: [{ role: 'user', content: 'x' }] });
      const final = await stream.finalMessage();
      assert.equal(final.content[0].type === 'text' && final.content[0].text, 'hi');
      assert.equal(stream.request_id, (await stream.withResponse()).response.headers.get('x-tollgate-request-id'));
      assert.match(String(stream.request_id), UUID);

      mock.setFallback(errorReplyFor(400, 'invalid_request_error', 'bad thing'));
      const err = await anthropic.messages.create({ model: modelFor(family), max_tokens: 16, messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
      assert.ok(err instanceof Anthropic.BadRequestError);
      assert.equal(err.requestID, err.headers?.get('x-tollgate-request-id'));
      assert.match(String(err.requestID), UUID);
    });
  }

  it("the gateway's own refusals carry it too (401 before any route work, 405)", async () => {
    const bad = new OpenAI({ apiKey: 'sk-not-a-key', baseURL: `${gw.proxyUrl}/v1`, maxRetries: 0 });
    const e1 = await bad.chat.completions.create({ model: 'm-openai', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    assert.ok(e1 instanceof OpenAI.AuthenticationError);
    assert.match(String(e1.requestID), UUID);
    const badA = new Anthropic({ apiKey: 'sk-not-a-key', baseURL: gw.proxyUrl, maxRetries: 0 });
    const e2 = await badA.messages.countTokens({ model: 'm-anthropic', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    assert.ok(e2 instanceof Anthropic.AuthenticationError);
    assert.match(String(e2.requestID), UUID);
    const res = await fetch(`${gw.proxyUrl}/v1/messages`, { method: 'GET' });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('request-id'), res.headers.get('x-tollgate-request-id'));
    await res.arrayBuffer();
  });
});

describe('SDK stream helpers', () => {
  for (const family of FAMILIES) {
    it(`openai chat.completions.stream() → ${family}: parallel tool calls, arguments across chunks, finalChatCompletion`, async () => {
      mock.setFallback(replyFor(TOOLS_TURN));
      const argDeltas: string[] = [];
      const stream = openai.chat.completions.stream({
        model: modelFor(family),
        messages: [{ role: 'user', content: 'weather in Paris and Rome?' }],
        tools: [{ type: 'function', function: { name: 'get_weather', parameters: WEATHER } }],
        stream_options: { include_usage: true },
      });
      stream.on('tool_calls.function.arguments.delta', (e) => argDeltas.push(e.arguments_delta));
      const final = await stream.finalChatCompletion();
      const message = final.choices[0].message;
      assert.equal(final.choices[0].finish_reason, 'tool_calls');
      assert.equal(message.content, 'Checking both.');
      assert.deepEqual(
        message.tool_calls?.map((c) => (c.type === 'function' ? [c.id, c.function.name, JSON.parse(c.function.arguments)] : [])),
        [['call_paris', 'get_weather', { city: 'Paris' }], ['call_rome', 'get_weather', { city: 'Rome', unit: 'celsius' }]],
      );
      assert.ok(argDeltas.length > 2, 'arguments arrive in pieces');
      assert.equal(final.model, modelFor(family));
      assert.ok(final.usage !== undefined && final.usage !== null && final.usage.total_tokens > 0);
    });

    it(`anthropic messages.stream() → ${family}: on('text'), input_json_delta, thinking, finalMessage`, async () => {
      mock.setFallback(replyFor({ ...TOOLS_TURN, reasoning: 'Two cities.' }));
      const texts: string[] = [];
      let jsonEvents = 0;
      const stream = anthropic.messages.stream({
        model: modelFor(family),
        max_tokens: 256,
        messages: [{ role: 'user', content: 'weather in Paris and Rome?' }],
        tools: [{ name: 'get_weather', input_schema: WEATHER as Anthropic.Tool.InputSchema }],
      });
      stream.on('text', (delta) => texts.push(delta));
      stream.on('inputJson', () => jsonEvents++);
      const final = await stream.finalMessage();
      assert.equal(texts.join(''), 'Checking both.');
      assert.ok(jsonEvents > 2);
      assert.equal(final.stop_reason, 'tool_use');
      assert.deepEqual(final.content.map((b) => b.type), ['thinking', 'text', 'tool_use', 'tool_use']);
      assert.deepEqual(final.content.filter((b) => b.type === 'tool_use').map((b) => b.type === 'tool_use' && b.input), [{ city: 'Paris' }, { city: 'Rome', unit: 'celsius' }]);
      assert.equal(final.model, modelFor(family));
    });
  }

  it('openai n: 2 stream (native): both choice indexes reach finalChatCompletion', async () => {
    const base = { id: 'chatcmpl-n2', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-up' };
    const chunk = (index: number, delta: object, finish: string | null = null) => ({ ...base, choices: [{ index, delta, logprobs: null, finish_reason: finish }], usage: null });
    mock.setFallback({
      sse: [
        chunk(0, { role: 'assistant', content: '' }), chunk(1, { role: 'assistant', content: '' }),
        chunk(0, { content: 'first' }), chunk(1, { content: 'second' }),
        chunk(1, {}, 'stop'), chunk(0, {}, 'length'),
        { ...base, choices: [], usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 } },
      ],
    });
    const final = await openai.chat.completions.stream({ model: 'm-openai', n: 2, messages: [{ role: 'user', content: 'x' }] }).finalChatCompletion();
    assert.deepEqual(final.choices.map((c) => [c.index, c.message.content, c.finish_reason]), [[0, 'first', 'length'], [1, 'second', 'stop']]);
  });
});

describe('retry hints: an upstream 429 tells the SDK when to retry', () => {
  for (const family of FAMILIES) {
    it(`a retry-after-ms only upstream (${family}): both SDKs get the hint, exact and in seconds, and retry once it passed`, async () => {
      // Azure OpenAI style: a sub-second hint in retry-after-ms. Without a hint, the SDKs back
      // off on their own schedule; with Retry-After rounded up, they would wait a whole second.
      const limited = errorReplyFor(429, 'rate_limit_error', 'slow down', { 'retry-after-ms': '300' });
      mock.setFallback(limited);
      const e1 = await openai.chat.completions.create({ model: modelFor(family), messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
      assert.ok(e1 instanceof OpenAI.RateLimitError);
      assert.equal(e1.headers?.get('retry-after-ms'), '300');
      assert.equal(e1.headers?.get('retry-after'), '1');
      const e2 = await anthropic.messages.create({ model: modelFor(family), max_tokens: 16, messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
      assert.ok(e2 instanceof Anthropic.RateLimitError);
      assert.equal(e2.headers?.get('retry-after-ms'), '300');

      mock.reset();
      mock.script(limited);
      mock.setFallback(replyFor({ text: 'after the wait' }));
      const retrying = new OpenAI({ apiKey: CALLER_KEY, baseURL: `${gw.proxyUrl}/v1`, maxRetries: 1 });
      const started = Date.now();
      const r = await retrying.chat.completions.create({ model: modelFor(family), messages: [{ role: 'user', content: 'x' }] });
      assert.equal(r.choices[0].message.content, 'after the wait');
      assert.equal(mock.requests.length, 2);
      assert.ok(Date.now() - started >= 290, 'the SDK waited the hinted time');
    });
  }
});
