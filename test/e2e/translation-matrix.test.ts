// E2E: the same caller scenarios over every (caller format × upstream family) pair, so a fix
// cannot land in one pair and miss another. Callers are the official `openai` and
// `@anthropic-ai/sdk` clients; one mock upstream answers in whichever family it was addressed as
// (OpenAI `/v1/chat/completions`, Anthropic `/v1/messages`).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type OpenAI from 'openai';
import type Anthropic from '@anthropic-ai/sdk';
import type { Gateway } from '../harness/spawn.ts';
import type { MockUpstream } from '../harness/mock-upstream.ts';
import { anthropicFrames, errorReplyFor, openAIFrames, replyFor, type Family, type Turn } from '../harness/provider-wire.ts';
import { waitForLines } from '../harness/log-lines.ts';
import { modelFor, useTwoFamilyFixture } from '../harness/two-families.ts';

const CALLER_KEY = 'sk-e2e-matrix-caller-41c2';
const UPSTREAM_SECRET = 'sk-upstream-matrix-secret';

let mock: MockUpstream;
let gw: Gateway;
let openai: OpenAI;
let anthropic: Anthropic;

useTwoFamilyFixture({
  callerKey: CALLER_KEY,
  upstreamKey: UPSTREAM_SECRET,
  models: [
    { display_name: 'g-mixed', routing: { targets: [{ model: 'm-openai' }, { model: 'm-anthropic' }] } },
    { display_name: 'g-openai', routing: { targets: [{ model: 'm-openai' }] } },
  ],
  anthropicHeaders: { 'anthropic-beta': 'matrix-beta-1' },
  ready: (fx) => ({ mock, gw, openai, anthropic } = fx),
});

const FAMILIES: Family[] = ['openai', 'anthropic'];

/** What a caller observed, in one shape for both SDKs. */
interface Seen {
  text: string;
  reasoning: string;
  toolCalls: Array<{ id: string; name: string; input: unknown }>;
  finish: string;
  usage: { input: number; output: number; cacheRead: number };
  model: string;
}

const WEATHER_TOOL = {
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

interface Ask {
  system?: string;
  developer?: string;
  user: string | Array<{ kind: 'text'; text: string } | { kind: 'image'; mediaType: string; data: string }>;
  tools?: boolean;
  /** A previous tool call and its result, before the user turn. */
  toolRound?: { id: string; input: Record<string, unknown>; result: string };
  stream: boolean;
}

async function viaOpenAI(model: string, ask: Ask): Promise<Seen> {
  const messages: any[] = [];
  if (ask.system !== undefined) messages.push({ role: 'system', content: ask.system });
  if (ask.developer !== undefined) messages.push({ role: 'developer', content: ask.developer });
  if (ask.toolRound !== undefined) {
    messages.push({ role: 'user', content: 'weather?' });
    messages.push({ role: 'assistant', content: null, tool_calls: [{ id: ask.toolRound.id, type: 'function', function: { name: WEATHER_TOOL.name, arguments: JSON.stringify(ask.toolRound.input) } }] });
    messages.push({ role: 'tool', tool_call_id: ask.toolRound.id, content: ask.toolRound.result });
  }
  messages.push({
    role: 'user',
    content: typeof ask.user === 'string' ? ask.user : ask.user.map((p) => (p.kind === 'text' ? { type: 'text', text: p.text } : { type: 'image_url', image_url: { url: `data:${p.mediaType};base64,${p.data}` } })),
  });
  const params: any = { model, messages, max_tokens: 256 };
  if (ask.tools === true) params.tools = [{ type: 'function', function: WEATHER_TOOL }];
  if (!ask.stream) {
    const r = await openai.chat.completions.create(params);
    const m = r.choices[0].message as any;
    return {
      text: m.content ?? '',
      reasoning: m.reasoning_content ?? '',
      toolCalls: (m.tool_calls ?? []).map((c: any) => ({ id: c.id, name: c.function.name, input: JSON.parse(c.function.arguments) })),
      finish: r.choices[0].finish_reason,
      usage: { input: r.usage!.prompt_tokens, output: r.usage!.completion_tokens, cacheRead: r.usage!.prompt_tokens_details?.cached_tokens ?? 0 },
      model: r.model,
    };
  }
  const stream = await openai.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  const seen: Seen = { text: '', reasoning: '', toolCalls: [], finish: '', usage: { input: 0, output: 0, cacheRead: 0 }, model: '' };
  const args: string[] = [];
  for await (const chunk of stream as any) {
    seen.model = chunk.model;
    if (chunk.usage) seen.usage = { input: chunk.usage.prompt_tokens, output: chunk.usage.completion_tokens, cacheRead: chunk.usage.prompt_tokens_details?.cached_tokens ?? 0 };
    const c = chunk.choices[0];
    if (c === undefined) continue;
    if (c.delta.content) seen.text += c.delta.content;
    if (c.delta.reasoning_content) seen.reasoning += c.delta.reasoning_content;
    for (const tc of c.delta.tool_calls ?? []) {
      if (tc.id) seen.toolCalls[tc.index] = { id: tc.id, name: tc.function?.name, input: undefined };
      args[tc.index] = (args[tc.index] ?? '') + (tc.function?.arguments ?? '');
    }
    if (c.finish_reason) seen.finish = c.finish_reason;
  }
  seen.toolCalls.forEach((tc, i) => (tc.input = JSON.parse(args[i])));
  return seen;
}

const STOP_TO_FINISH: Record<string, string> = { end_turn: 'stop', tool_use: 'tool_calls', max_tokens: 'length' };

async function viaAnthropic(model: string, ask: Ask): Promise<Seen> {
  const messages: any[] = [];
  if (ask.toolRound !== undefined) {
    messages.push({ role: 'user', content: 'weather?' });
    messages.push({ role: 'assistant', content: [{ type: 'tool_use', id: ask.toolRound.id, name: WEATHER_TOOL.name, input: ask.toolRound.input }] });
  }
  const userContent: any[] = [];
  if (ask.toolRound !== undefined) userContent.push({ type: 'tool_result', tool_use_id: ask.toolRound.id, content: ask.toolRound.result });
  if (typeof ask.user === 'string') userContent.push({ type: 'text', text: ask.user });
  else for (const p of ask.user) userContent.push(p.kind === 'text' ? { type: 'text', text: p.text } : { type: 'image', source: { type: 'base64', media_type: p.mediaType, data: p.data } });
  messages.push({ role: 'user', content: userContent });
  const params: any = { model, max_tokens: 256, messages };
  const system = [ask.system, ask.developer].filter((s) => s !== undefined).join('\n\n');
  if (system !== '') params.system = system;
  if (ask.tools === true) params.tools = [{ name: WEATHER_TOOL.name, description: WEATHER_TOOL.description, input_schema: WEATHER_TOOL.parameters }];
  const msg: any = ask.stream ? await anthropic.messages.stream(params).finalMessage() : await anthropic.messages.create(params);
  return {
    text: msg.content.filter((b: any) => b.type === 'text').map((b: any) => b.text).join(''),
    reasoning: msg.content.filter((b: any) => b.type === 'thinking').map((b: any) => b.thinking).join(''),
    toolCalls: msg.content.filter((b: any) => b.type === 'tool_use').map((b: any) => ({ id: b.id, name: b.name, input: b.input })),
    finish: STOP_TO_FINISH[msg.stop_reason] ?? msg.stop_reason,
    usage: {
      input: msg.usage.input_tokens + (msg.usage.cache_read_input_tokens ?? 0) + (msg.usage.cache_creation_input_tokens ?? 0),
      output: msg.usage.output_tokens,
      cacheRead: msg.usage.cache_read_input_tokens ?? 0,
    },
    model: msg.model,
  };
}

type Caller = 'openai' | 'anthropic';
const CALLERS: Caller[] = ['openai', 'anthropic'];
const call = (caller: Caller, family: Family, ask: Ask): Promise<Seen> => (caller === 'openai' ? viaOpenAI : viaAnthropic)(modelFor(family), ask);

/** What the upstream received, in one shape for both families. */
function upstreamView(family: Family): { system: string; userText: string; images: number; toolResult: string | undefined; tools: string[]; body: any } {
  const body = mock.requests.at(-1)!.json;
  if (family === 'anthropic') {
    const system = typeof body.system === 'string' ? body.system : (body.system ?? []).map((b: any) => b.text).join('\n\n');
    const blocks = body.messages.flatMap((m: any) => (typeof m.content === 'string' ? [{ type: 'text', text: m.content, role: m.role }] : m.content.map((b: any) => ({ ...b, role: m.role }))));
    const last = body.messages.at(-1);
    const lastBlocks = typeof last.content === 'string' ? [{ type: 'text', text: last.content }] : last.content;
    return {
      system,
      userText: lastBlocks.filter((b: any) => b.type === 'text').map((b: any) => b.text).join(''),
      images: blocks.filter((b: any) => b.type === 'image').length,
      toolResult: blocks.find((b: any) => b.type === 'tool_result')?.content?.toString?.() ?? flattenToolResult(blocks.find((b: any) => b.type === 'tool_result')),
      tools: (body.tools ?? []).map((t: any) => t.name),
      body,
    };
  }
  const msgs = body.messages;
  const last = msgs.at(-1);
  const parts = typeof last.content === 'string' ? [{ type: 'text', text: last.content }] : last.content;
  return {
    system: msgs.filter((m: any) => m.role === 'system' || m.role === 'developer').map((m: any) => (typeof m.content === 'string' ? m.content : m.content.map((p: any) => p.text).join(''))).join('\n\n'),
    userText: parts.filter((p: any) => p.type === 'text').map((p: any) => p.text).join(''),
    images: msgs.flatMap((m: any) => (Array.isArray(m.content) ? m.content : [])).filter((p: any) => p.type === 'image_url').length,
    toolResult: msgs.find((m: any) => m.role === 'tool')?.content,
    tools: (body.tools ?? []).map((t: any) => t.function.name),
    body,
  };
}

function flattenToolResult(block: any): string | undefined {
  if (block === undefined) return undefined;
  if (typeof block.content === 'string') return block.content;
  return (block.content ?? []).map((b: any) => b.text).join('');
}

const TEXT_TURN: Turn = { text: 'The answer is forty-two.', usage: { input: 20, output: 9, cacheRead: 4 } };
const TOOL_TURN: Turn = { toolCalls: [{ id: 'toolu_wire01', name: 'get_weather', input: { city: 'Paris' } }], usage: { input: 30, output: 12 } };
const THINKING_TURN: Turn = { reasoning: 'Let me think about it.', text: 'Done thinking.', usage: { input: 15, output: 25 } };
const PNG_1PX = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

for (const caller of CALLERS) {
  for (const family of FAMILIES) {
    describe(`${caller} caller → ${family} upstream`, () => {
      for (const stream of [false, true]) {
        const mode = stream ? 'stream' : 'json';

        it(`plain text with usage (${mode})`, async () => {
          mock.setFallback(replyFor(TEXT_TURN));
          const seen = await call(caller, family, { user: 'What is the answer?', stream });
          assert.equal(seen.text, TEXT_TURN.text);
          assert.equal(seen.finish, 'stop');
          assert.equal(seen.model, modelFor(family), 'the caller sees its alias');
          assert.deepEqual(seen.usage, { input: 24, output: 9, cacheRead: 4 });
          const up = upstreamView(family);
          assert.equal(up.userText, 'What is the answer?');
          assert.equal(up.body.model, family === 'openai' ? 'gpt-4o-up' : 'claude-up');
          assert.equal(up.body.stream === true, stream);
          const headers = mock.requests.at(-1)!.headers;
          if (family === 'anthropic') {
            assert.equal(headers['x-api-key'], UPSTREAM_SECRET);
            if (caller === 'anthropic') {
              // Native: the caller's vendor headers (its API version, betas) are forwarded.
              assert.match(String(headers['anthropic-version']), /^\d{4}-\d{2}-\d{2}$/);
              assert.equal(headers['anthropic-beta'], 'matrix-beta-1');
            } else {
              assert.equal(headers['anthropic-version'], '2023-06-01');
              assert.equal(headers['anthropic-beta'], undefined);
            }
            assert.equal(mock.requests.at(-1)!.url, '/v1/messages');
          } else {
            assert.equal(headers.authorization, `Bearer ${UPSTREAM_SECRET}`);
            assert.equal(mock.requests.at(-1)!.url, '/v1/chat/completions');
          }
        });

        it(`multi-turn tools (${mode})`, async () => {
          mock.setFallback(replyFor(TOOL_TURN));
          const first = await call(caller, family, { user: 'weather in Paris?', tools: true, stream });
          assert.equal(first.finish, 'tool_calls');
          assert.deepEqual(first.toolCalls, [{ id: 'toolu_wire01', name: 'get_weather', input: { city: 'Paris' } }]);
          assert.deepEqual(upstreamView(family).tools, ['get_weather']);
          mock.setFallback(replyFor(TEXT_TURN));
          const second = await call(caller, family, { user: 'thanks', tools: true, toolRound: { id: 'toolu_wire01', input: { city: 'Paris' }, result: 'sunny, 21C' }, stream });
          assert.equal(second.text, TEXT_TURN.text);
          const up = upstreamView(family);
          assert.equal(up.toolResult, 'sunny, 21C');
          assert.equal(up.userText, 'thanks');
        });

        it(`thinking / reasoning content (${mode})`, async () => {
          mock.setFallback(replyFor(THINKING_TURN));
          const seen = await call(caller, family, { user: 'think', stream });
          assert.equal(seen.reasoning, THINKING_TURN.reasoning);
          assert.equal(seen.text, THINKING_TURN.text);
        });
      }

      it('system and developer instructions reach the upstream', async () => {
        mock.setFallback(replyFor(TEXT_TURN));
        await call(caller, family, { system: 'Be terse.', developer: 'Answer in French.', user: 'hello', stream: false });
        const up = upstreamView(family);
        assert.equal(up.system, 'Be terse.\n\nAnswer in French.');
        if (family === 'anthropic') {
          assert.ok(up.body.messages.every((m: any) => m.role === 'user' || m.role === 'assistant'), 'no system role left in messages');
        }
      });

      it('images', async () => {
        mock.setFallback(replyFor(TEXT_TURN));
        await call(caller, family, { user: [{ kind: 'text', text: 'what is this?' }, { kind: 'image', mediaType: 'image/png', data: PNG_1PX }], stream: false });
        const up = upstreamView(family);
        assert.equal(up.images, 1);
        const body = up.body;
        if (family === 'anthropic') {
          const img = body.messages.at(-1).content.find((b: any) => b.type === 'image');
          assert.deepEqual(img.source, { type: 'base64', media_type: 'image/png', data: PNG_1PX });
        } else {
          const img = body.messages.at(-1).content.find((p: any) => p.type === 'image_url');
          assert.equal(img.image_url.url, `data:image/png;base64,${PNG_1PX}`);
        }
      });

      for (const [status, type, expectStatus] of [
        [400, 'invalid_request_error', 400],
        [401, 'authentication_error', 401],
        [404, 'not_found_error', 404],
        [429, 'rate_limit_error', 429],
        [500, 'api_error', 502],
        [529, 'overloaded_error', 502],
      ] as const) {
        it(`upstream ${status} reaches the caller as ${expectStatus} in its envelope`, async () => {
          mock.setFallback(errorReplyFor(status, type, `upstream says ${status}`, status === 429 ? { 'retry-after': '7' } : undefined));
          const err: any = await call(caller, family, { user: 'hi', stream: false }).then(
            () => assert.fail('expected an error'),
            (e: unknown) => e,
          );
          assert.equal(err.status, expectStatus);
          if (caller === 'anthropic') {
            assert.equal(err.error?.type, 'error', 'Anthropic envelope');
            assert.equal(typeof err.error?.error?.type, 'string');
          } else {
            assert.equal(typeof err.error?.message, 'string', 'OpenAI envelope');
          }
          if (status < 500) assert.match(JSON.stringify(err.error), new RegExp(`upstream says ${status}`));
          if (status === 429) assert.equal(err.headers?.get?.('retry-after') ?? err.headers?.['retry-after'], '7');
          assert.doesNotMatch(JSON.stringify(err.error), new RegExp(UPSTREAM_SECRET));
        });
      }

      it('a caller that leaves mid-stream cancels the upstream request', async () => {
        const t: Turn = { text: 'x'.repeat(200) };
        const reply = replyFor(t);
        mock.setFallback((req) => ({ ...reply(req), delayBetweenEventsMs: 40 }));
        const abortsBefore = mock.aborted;
        const controller = new AbortController();
        const got = caller === 'openai'
          ? (async () => {
              const s = await openai.chat.completions.create({ model: modelFor(family), messages: [{ role: 'user', content: 'go' }], stream: true }, { signal: controller.signal });
              for await (const _ of s) {
                controller.abort();
              }
            })()
          : (async () => {
              const s = anthropic.messages.stream({ model: modelFor(family), max_tokens: 50, messages: [{ role: 'user', content: 'go' }] }, { signal: controller.signal });
              for await (const _ of s) {
                controller.abort();
              }
            })();
        await got.catch(() => undefined);
        const deadline = Date.now() + 3000;
        while (mock.aborted === abortsBefore && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        assert.equal(mock.aborted, abortsBefore + 1, 'the upstream request was cancelled');
      });
    });
  }
}

describe('delivery rules on the translated path', () => {
  it('a system message of 300,000 text parts reaches an Anthropic upstream as that many system blocks', async () => {
    mock.setFallback(replyFor(TEXT_TURN));
    const parts = Array.from({ length: 300_000 }, () => ({ type: 'text', text: 'a' }));
    await openai.chat.completions.create({ model: 'm-anthropic', messages: [{ role: 'system', content: parts }, { role: 'user', content: 'x' }] } as any);
    assert.equal(mock.requests.at(-1)!.json.system.length, 300_000);
  });

  it('reasoning_effort becomes a thinking budget, with max_tokens = budget + 4096 when the caller set none', async () => {
    mock.setFallback(replyFor(TEXT_TURN));
    await openai.chat.completions.create({ model: 'm-anthropic', messages: [{ role: 'user', content: 'think hard' }], reasoning_effort: 'high' } as any);
    const body = mock.requests.at(-1)!.json;
    assert.deepEqual(body.thinking, { type: 'enabled', budget_tokens: 4096 });
    assert.equal(body.max_tokens, 8192);
    assert.equal(body.reasoning_effort, undefined);
  });

  it('a caller max_tokens is kept and caps the budget; at 1024 or less thinking stays off', async () => {
    mock.setFallback(replyFor(TEXT_TURN));
    await openai.chat.completions.create({ model: 'm-anthropic', messages: [{ role: 'user', content: 'x' }], reasoning_effort: 'high', max_tokens: 2000 } as any);
    let body = mock.requests.at(-1)!.json;
    assert.equal(body.max_tokens, 2000);
    assert.deepEqual(body.thinking, { type: 'enabled', budget_tokens: 1999 });
    await openai.chat.completions.create({ model: 'm-anthropic', messages: [{ role: 'user', content: 'x' }], reasoning_effort: 'low', max_tokens: 1024 } as any);
    body = mock.requests.at(-1)!.json;
    assert.equal(body.thinking, undefined);
  });

  it('developer messages move to the top-level system field from anywhere in the conversation', async () => {
    mock.setFallback(replyFor(TEXT_TURN));
    await openai.chat.completions.create({
      model: 'm-anthropic',
      messages: [
        { role: 'system', content: 'S1' },
        { role: 'user', content: 'u1' },
        { role: 'assistant', content: 'a1' },
        { role: 'developer', content: 'D-late' },
        { role: 'user', content: 'u2' },
      ],
    });
    const body = mock.requests.at(-1)!.json;
    const system = typeof body.system === 'string' ? body.system : body.system.map((b: any) => b.text).join('\n\n');
    assert.equal(system, 'S1\n\nD-late');
    assert.deepEqual(body.messages.map((m: any) => m.role), ['user', 'assistant', 'user']);
  });

  it('an upstream stream that ends after its finish reason without its end marker is complete for the caller, both ways', async () => {
    const turn: Turn = { text: 'whole answer', usage: { input: 10, output: 3 } };
    // Everything but message_stop from Anthropic; everything but [DONE] from OpenAI.
    mock.setFallback((req) => (req.url.includes('/messages') ? { sse: anthropicFrames(turn, 'up').slice(0, -1), done: false } : { sse: openAIFrames(turn, 'up'), done: false }));
    const chat = await openai.chat.completions.create({ model: 'm-anthropic', messages: [{ role: 'user', content: 'go' }], stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage: any;
    for await (const c of chat) {
      text += c.choices[0]?.delta?.content ?? '';
      usage = c.usage ?? usage;
    }
    assert.equal(text, 'whole answer');
    assert.equal(usage?.completion_tokens, 3, 'the usage chunk message_stop would have closed with');
    const message = await anthropic.messages.stream({ model: 'm-openai', max_tokens: 50, messages: [{ role: 'user', content: 'go' }] }).finalMessage();
    assert.deepEqual(message.content, [{ type: 'text', text: 'whole answer' }]);
  });

  it('an upstream stream that ends with its end marker but no finish reason ends with an error frame, recorded 502 upstream_decode, both ways', async () => {
    const turn: Turn = { text: 'cut short', usage: { input: 4, output: 2 } };
    // No message_delta from Anthropic; no finish_reason chunk from OpenAI; both end markers sent.
    mock.setFallback((req) => (req.url.includes('/messages')
      ? { sse: anthropicFrames(turn, 'up').filter((f) => !f.startsWith('event: message_delta')), done: false }
      : { sse: openAIFrames(turn, 'up').filter((c: any) => !c.choices.some((ch: any) => ch.finish_reason !== null)) }));
    const res = await fetch(`${gw.proxyUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${CALLER_KEY}` },
      body: JSON.stringify({ model: 'm-anthropic', messages: [{ role: 'user', content: 'go' }], stream: true }),
    });
    const text = await res.text();
    assert.match(text, /cut s/);
    assert.match(text, /event: error\ndata: .*"code":"upstream_decode"/);
    assert.doesNotMatch(text, /\[DONE\]/);
    const [chatRow] = await waitForLines(gw, 'usage', (l) => l.request_id === res.headers.get('x-tollgate-request-id'));
    assert.equal(chatRow.status, 502);
    assert.equal(chatRow.error_class, 'upstream_decode');
    const stream = anthropic.messages.stream({ model: 'm-openai', max_tokens: 50, messages: [{ role: 'user', content: 'go' }] });
    await assert.rejects(stream.finalMessage(), /without a finish reason/);
    const id = (await stream.withResponse()).response.headers.get('x-tollgate-request-id');
    const [messagesRow] = await waitForLines(gw, 'usage', (l) => l.request_id === id);
    assert.equal(messagesRow.status, 502);
    assert.equal(messagesRow.error_class, 'upstream_decode');
  });

  it('a translated in-band error is recorded with the upstream error\'s own status, as on the native path', async () => {
    const turn: Turn = { text: 'some text', usage: { input: 4, output: 2 } };
    const quota = { error: { message: 'quota', type: 'insufficient_quota', code: 'rate_limit_exceeded' } };
    mock.setFallback((req) => (req.url.includes('/messages')
      ? { sse: [...anthropicFrames(turn, 'up').slice(0, 4), 'event: error\ndata: {"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}\n\n'], done: false }
      : { sse: [...openAIFrames(turn, 'up').slice(0, 2), quota], done: false }));
    const send = (path: string, model: string, body: object) => fetch(`${gw.proxyUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${CALLER_KEY}` },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'go' }], stream: true, ...body }),
    });
    // Anthropic caller, OpenAI upstream: the frame and the row say 429.
    const messages = await send('/v1/messages', 'm-openai', { max_tokens: 50 });
    const text = await messages.text();
    assert.match(text, /event: error\ndata: .*"type":"rate_limit_error"/);
    const [m] = await waitForLines(gw, 'usage', (l) => l.request_id === messages.headers.get('x-tollgate-request-id'));
    assert.equal(m.status, 429);
    assert.equal(m.error_class, 'upstream_in_band');
    // OpenAI caller, Anthropic upstream.
    const chat = await send('/v1/chat/completions', 'm-anthropic', {});
    assert.match(await chat.text(), /slow down/);
    const [c] = await waitForLines(gw, 'usage', (l) => l.request_id === chat.headers.get('x-tollgate-request-id'));
    assert.equal(c.status, 429);
  });

  it('a mid-stream Anthropic error event reaches an OpenAI caller as an error event, without [DONE]', async () => {
    const frames = [
      'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-up","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}\n\n',
      'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
      'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"partial"}}\n\n',
      'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n',
    ];
    mock.setFallback({ sse: frames, done: false });
    const res = await fetch(`${gw.proxyUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${CALLER_KEY}` },
      body: JSON.stringify({ model: 'm-anthropic', messages: [{ role: 'user', content: 'go' }], stream: true }),
    });
    const text = await res.text();
    assert.match(text, /partial/);
    assert.match(text, /event: error\ndata: .*Overloaded/);
    assert.doesNotMatch(text, /\[DONE\]/);
  });

  it('an Anthropic stream the gateway cannot read ends an OpenAI caller\'s stream with type upstream_error, code upstream_decode', async () => {
    mock.setFallback({ sse: ['event: message_start\ndata: not json at all\n\n'], done: false });
    const res = await fetch(`${gw.proxyUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${CALLER_KEY}` },
      body: JSON.stringify({ model: 'm-anthropic', messages: [{ role: 'user', content: 'go' }], stream: true }),
    });
    const text = await res.text();
    const data = /event: error\ndata: (.*)/.exec(text)?.[1];
    assert.ok(data, text);
    const error = JSON.parse(data).error;
    assert.equal(error.type, 'upstream_error');
    assert.equal(error.code, 'upstream_decode');
  });
});

describe('count_tokens', () => {
  it('is served natively by messages-family targets', async () => {
    mock.setFallback({ json: { input_tokens: 42 } });
    const r = await anthropic.messages.countTokens({ model: 'm-anthropic', messages: [{ role: 'user', content: 'count me' }] });
    assert.equal(r.input_tokens, 42);
    assert.equal(mock.requests.at(-1)!.url, '/v1/messages/count_tokens');
    assert.equal(mock.requests.at(-1)!.json.model, 'claude-up');
  });

  it('on a group, is served by its messages-family targets (the others are passed over); a group without one gets the 400', async () => {
    mock.setFallback({ json: { input_tokens: 7 } });
    const r = await anthropic.messages.countTokens({ model: 'g-mixed', messages: [{ role: 'user', content: 'count me' }] });
    assert.equal(r.input_tokens, 7);
    assert.equal(mock.requests.at(-1)!.json.model, 'claude-up');
    const before = mock.requests.length;
    const err: any = await anthropic.messages.countTokens({ model: 'g-openai', messages: [{ role: 'user', content: 'count me' }] }).then(
      () => assert.fail('expected 400'),
      (e: unknown) => e,
    );
    assert.equal(err.status, 400);
    assert.match(err.error.error.message, /only available for messages-family/);
    assert.equal(mock.requests.length, before);
  });

  it('is rejected with a clear 400 for other targets, before any upstream call', async () => {
    const before = mock.requests.length;
    const err: any = await anthropic.messages.countTokens({ model: 'm-openai', messages: [{ role: 'user', content: 'count me' }] }).then(
      () => assert.fail('expected 400'),
      (e: unknown) => e,
    );
    assert.equal(err.status, 400);
    assert.equal(err.error.type, 'error');
    assert.match(err.error.error.message, /count_tokens/);
    assert.equal(mock.requests.length, before);
  });
});
