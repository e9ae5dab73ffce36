// E2E: streamed chat completions when things go wrong or slowly (docs/errors.md "Streams"):
// upstream breaks and stalls after the head (error event, no [DONE]), stalls before the first
// event (an ordinary 504), failures before the head keep their status, bytes flow as they
// arrive, and a caller that leaves cancels the upstream request.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import OpenAI from 'openai';
import type { Gateway } from '../harness/spawn.ts';
import { useProxyFixture } from '../harness/proxy-fixture.ts';
import { chatChunks, type MockUpstream } from '../harness/mock-upstream.ts';
import { waitForLines } from '../harness/log-lines.ts';
import { usageOf } from '../harness/echo-upstream.ts';

const CALLER_KEY = 'sk-e2e-streams-caller-6b3f';
const STREAM_TIMEOUT_MS = 700;

let mock: MockUpstream;
let gw: Gateway;
let client: OpenAI;

useProxyFixture({
  config: {
    upstream: { timeout_ms: 10_000, stream_timeout_ms: STREAM_TIMEOUT_MS, retries: 0 },
  },
  resources: (mockUrl) => ({
    _format_version: '1',
    provider_keys: [{ display_name: 'up', provider: 'openai', api_key: 'sk-upstream-secret', api_base: `${mockUrl}/v1` }],
    models: [{ display_name: 'fast', provider: 'openai', model_name: 'gpt-4o-mini', provider_key: 'up' }],
    api_keys: [{ display_name: 'caller', key_env: 'E2E_STREAMS_KEY', allowed_models: ['*'] }],
  }),
  env: { E2E_STREAMS_KEY: CALLER_KEY },
  callerKey: CALLER_KEY,
  ready: (fx) => ({ mock, gw, client } = fx),
});

const hi = [{ role: 'user' as const, content: 'hi' }];

function postStream(init: RequestInit = {}): Promise<Response> {
  return fetch(`${gw.proxyUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${CALLER_KEY}` },
    body: JSON.stringify({ model: 'fast', messages: hi, stream: true }),
    ...init,
  });
}

/** The SSE events of a raw body: `{ event, data }`, `event` undefined for plain data events. */
function sseEvents(text: string): Array<{ event: string | undefined; data: string }> {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      let event: string | undefined;
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
      }
      return { event, data: data.join('\n') };
    });
}

async function waitFor(what: string, cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

// ---- failures after the head ----

test('an upstream that dies mid-stream: the caller gets the events so far, an error event, and no [DONE]', async () => {
  mock.script({ sse: chatChunks({ parts: ['Hello', ' world', '!'] }), disconnectAfterEvents: 2 });
  const res = await postStream();
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
  const text = await res.text();
  const events = sseEvents(text);
  assert.ok(!text.includes('[DONE]'), text);
  assert.deepEqual(events.slice(0, 2).map((e) => e.event), [undefined, undefined]);
  assert.equal(JSON.parse(events[1].data).choices[0].delta.content, 'Hello');
  const last = events.at(-1)!;
  assert.equal(last.event, 'error', text);
  const err = JSON.parse(last.data).error;
  assert.equal(err.type, 'upstream_error');
  assert.equal(err.code, 'upstream_transport');
  assert.equal(typeof err.message, 'string');
});

test('an upstream that dies mid-stream makes the SDK iterator throw', async () => {
  mock.script({ sse: chatChunks({ parts: ['Hello', ' world', '!'] }), disconnectAfterEvents: 2 });
  const stream = await client.chat.completions.create({ model: 'fast', messages: hi, stream: true });
  let text = '';
  await assert.rejects(
    (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    })(),
    (e: any) => {
      assert.ok(e instanceof OpenAI.APIError, String(e));
      assert.equal(e.code, 'upstream_transport');
      return true;
    },
  );
  assert.equal(text, 'Hello');
});

test('a gap between events longer than upstream.stream_timeout_ms ends the stream with an error event', async () => {
  mock.script({ sse: chatChunks({ parts: ['slow'] }), delayBetweenEventsMs: STREAM_TIMEOUT_MS * 3 });
  const t0 = performance.now();
  const res = await postStream();
  assert.equal(res.status, 200);
  const text = await res.text();
  const elapsed = performance.now() - t0;
  const events = sseEvents(text);
  assert.ok(!text.includes('[DONE]'), text);
  const last = events.at(-1)!;
  assert.equal(last.event, 'error', text);
  assert.equal(JSON.parse(last.data).error.code, 'upstream_timeout');
  assert.ok(elapsed < STREAM_TIMEOUT_MS * 2.5, `ended after ${elapsed} ms`);
});

test('an upstream stream that ends cleanly before finishing is an error event, not a silent end', async () => {
  mock.script({ sse: chatChunks({ parts: ['cut', ' short'] }).slice(0, 2), done: false });
  const text = await (await postStream()).text();
  assert.ok(!text.includes('[DONE]'), text);
  const last = sseEvents(text).at(-1)!;
  assert.equal(last.event, 'error', text);
  assert.equal(JSON.parse(last.data).error.type, 'upstream_error');
});

test('an upstream stream that finishes without [DONE] is completed with [DONE]', async () => {
  mock.script({ sse: chatChunks({ parts: ['done'] }), done: false });
  const text = await (await postStream()).text();
  assert.ok(!text.includes('event: error'), text);
  assert.equal(sseEvents(text).at(-1)!.data, '[DONE]');
});

test('a last event the upstream ends without its blank line is closed before the [DONE] the gateway adds', async () => {
  // LF, CRLF and bare-CR streams; the last event is cut at its line terminator or before it.
  for (const [eol, tail] of [['\n', ''], ['\n', '\n'], ['\r\n', '\r\n'], ['\r', '\r']]) {
    const events = chatChunks({ parts: ['all', ' there'] }).map((c) => `data: ${JSON.stringify(c)}`);
    mock.script({ headers: { 'content-type': 'text/event-stream' }, body: events.join(eol + eol) + tail });
    const stream = await client.chat.completions.create({ model: 'fast', messages: hi, stream: true });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    const label = JSON.stringify(eol + tail);
    assert.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), 'all there', label);
    assert.equal(chunks.at(-1)!.choices[0].finish_reason, 'stop', label);
  }
});

test('a compressed upstream answer (gzip JSON, br stream) reaches the SDK decoded, usage included', async () => {
  const usage = { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 };
  const json = JSON.stringify({ id: 'c', object: 'chat.completion', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, message: { role: 'assistant', content: 'zipped' }, finish_reason: 'stop' }], usage });
  mock.script({ headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: zlib.gzipSync(json) });
  const answer = await client.chat.completions.create({ model: 'fast', messages: hi });
  assert.equal(answer.choices[0].message.content, 'zipped');
  assert.deepEqual(answer.usage, usage);
  const events = chatChunks({ parts: ['zip', 'ped'], usage: { prompt_tokens: 4, completion_tokens: 2 } }).map((c) => `data: ${JSON.stringify(c)}\n\n`).join('') + 'data: [DONE]\n\n';
  mock.script({ headers: { 'content-type': 'text/event-stream', 'content-encoding': 'br' }, body: zlib.brotliCompressSync(events) });
  const stream = await client.chat.completions.create({ model: 'fast', messages: hi, stream: true, stream_options: { include_usage: true } });
  let text = '';
  let streamed;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta.content ?? '';
    streamed ??= chunk.usage ?? undefined;
  }
  assert.equal(text, 'zipped');
  assert.equal(streamed?.total_tokens, 6);
});

test('a body that does not decode from its content-encoding is upstream_decode (502), in the access log and the usage event', async () => {
  const notGzip = Buffer.from('this is not gzip at all');
  for (const stream of [false, true]) {
    mock.script({ headers: { 'content-type': stream ? 'text/event-stream' : 'application/json', 'content-encoding': 'gzip' }, body: notGzip });
    const res = await postStream({ body: JSON.stringify({ model: 'fast', messages: hi, stream }) });
    const text = await res.text();
    assert.equal(res.status, 502, text);
    assert.equal(JSON.parse(text).error.code, 'upstream_decode', text);
    const id = res.headers.get('x-tollgate-request-id');
    const [access] = await waitForLines(gw, 'access', (l) => l.request_id === id);
    assert.equal(access?.error_kind, 'upstream_decode', `stream: ${stream}`);
    assert.equal((await usageOf(gw, id)).error_class, 'upstream_decode', `stream: ${stream}`);
  }
  // A stream whose compressed bytes go bad after its first events: the error frame says so.
  const events = chatChunks({ parts: ['ok'] }).map((c) => `data: ${JSON.stringify(c)}\n\n`).join('');
  const packed = zlib.gzipSync(events);
  mock.script({ headers: { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' }, chunks: [packed.subarray(0, packed.length - 8), Buffer.from('garbage!garbage!')], chunkDelayMs: 50 });
  const res = await postStream();
  const body = await res.text();
  assert.equal(res.status, 200);
  assert.match(body, /"code":"upstream_decode"/);
  const [access] = await waitForLines(gw, 'access', (l) => l.request_id === res.headers.get('x-tollgate-request-id'));
  assert.equal(access?.error_kind, 'upstream_decode');
});

test('a body that does not decode ends the upstream exchange: an upstream still sending is cut, not left streaming', async () => {
  for (const stream of [false, true]) {
    mock.reset();
    // Bad from its first bytes, then ~3 s more of them unless the gateway hangs up.
    const rest = Array.from({ length: 60 }, () => 'still not gzip');
    mock.script({ headers: { 'content-type': stream ? 'text/event-stream' : 'application/json', 'content-encoding': 'gzip' }, chunks: ['this is not gzip at all', ...rest], chunkDelayMs: 50 });
    const res = await postStream({ body: JSON.stringify({ model: 'fast', messages: hi, stream }) });
    assert.equal(res.status, 502, await res.text());
    await waitFor(`the upstream request cut (stream: ${stream})`, () => mock.aborted === 1, 1500);
  }
});

// ---- failures before the head ----

test('no first event within upstream.stream_timeout_ms: 504, not a 200 stream', async () => {
  mock.script({ sse: chatChunks(), delayFirstEventMs: STREAM_TIMEOUT_MS * 3 });
  const res = await postStream();
  const text = await res.text();
  assert.equal(res.status, 504, text);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  const err = JSON.parse(text).error;
  assert.equal(err.type, 'timeout_error');
  assert.equal(err.code, 'upstream_timeout');
  mock.script({ sse: chatChunks(), delayFirstEventMs: STREAM_TIMEOUT_MS * 3 });
  await assert.rejects(client.chat.completions.create({ model: 'fast', messages: hi, stream: true }), (e: any) => {
    assert.ok(e instanceof OpenAI.InternalServerError, String(e));
    assert.equal(e.status, 504);
    return true;
  });
});

test('no response head within upstream.stream_timeout_ms on a stream request: 504 then too, the upstream request cut', async () => {
  mock.script({ sse: chatChunks(), delayHeadersMs: STREAM_TIMEOUT_MS * 4 });
  const started = Date.now();
  const res = await postStream();
  const text = await res.text();
  assert.equal(res.status, 504, text);
  assert.equal(JSON.parse(text).error.code, 'upstream_timeout');
  assert.ok(Date.now() - started < STREAM_TIMEOUT_MS * 3, `answered after ${Date.now() - started} ms, not at the stream timeout`);
  // Every request the upstream got is cut (a stale keep-alive connection can make it two).
  await waitFor('the upstream request cut', () => mock.aborted >= 1 && mock.aborted === mock.requests.length, 5000);
});

test('an upstream error status on a stream request is an ordinary error response with its status', async () => {
  mock.script({ status: 429, headers: { 'retry-after': '3' }, json: { error: { message: 'slow down', type: 'requests', code: 'rate_limit_exceeded' } } });
  const limited = await postStream();
  assert.equal(limited.status, 429);
  assert.equal(limited.headers.get('retry-after'), '3');
  assert.equal(((await limited.json()) as any).error.message, 'slow down');
  mock.script({ status: 503, body: 'overloaded' });
  const down = await postStream();
  assert.equal(down.status, 502);
  assert.equal(((await down.json()) as any).error.message, 'upstream returned 503 Service Unavailable');
});

// ---- flow ----

test('the first chunk reaches the caller while the upstream is still streaming', async () => {
  const GAP = 300;
  const chunks = chatChunks({ parts: ['a', 'b', 'c', 'd'] }); // 6 events: role, 4 parts, finish
  mock.script({ sse: chunks, delayBetweenEventsMs: GAP });
  const t0 = performance.now();
  const res = await postStream();
  assert.equal(res.status, 200);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let firstAt: number | undefined;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    if (firstAt === undefined && text.includes('data: {')) firstAt = performance.now() - t0;
  }
  const endAt = performance.now() - t0;
  assert.ok(text.includes('data: [DONE]'));
  assert.ok(firstAt !== undefined);
  // The upstream sends its last event about 5 gaps after its first (then [DONE] one gap later).
  assert.ok(endAt - firstAt > GAP * 4, `first chunk at ${firstAt} ms, end at ${endAt} ms`);
});

test('an event of one 15 MiB line, written in 64 KiB pieces, is relayed whole, and so is the event after it', async () => {
  const big = 'a'.repeat(15 * 1024 * 1024);
  const events = chatChunks({ parts: [big, ' after'] });
  const sse = events.flatMap((e): Array<string | object> => {
    const wire = `data: ${JSON.stringify(e)}\n\n`;
    if (wire.length < big.length) return [e];
    const pieces: string[] = [];
    for (let at = 0; at < wire.length; at += 64 * 1024) pieces.push(wire.slice(at, at + 64 * 1024));
    return pieces;
  });
  mock.script({ sse });
  // Read raw: the SDK's own line decoder takes seconds over a line this long.
  const res = await postStream();
  assert.equal(res.status, 200);
  const received = sseEvents(await res.text());
  assert.equal(received.length, events.length + 1);
  const contents = received.slice(0, -1).map((e) => JSON.parse(e.data).choices[0]?.delta?.content);
  assert.ok(contents[1] === big, `the big delta came back as ${String(contents[1]).length} characters`);
  assert.equal(contents[2], ' after');
  assert.equal(JSON.parse(received.at(-2)!.data).choices[0].finish_reason, 'stop');
  assert.equal(received.at(-1)!.data, '[DONE]');
});

test('a caller that aborts mid-stream closes the upstream request', async () => {
  mock.script({ sse: chatChunks({ parts: Array.from({ length: 40 }, (_, i) => `part${i} `) }), delayBetweenEventsMs: 100 });
  const controller = new AbortController();
  const requestId = `e2e-abort-${Date.now()}`;
  const res = await postStream({
    signal: controller.signal,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${CALLER_KEY}`, 'x-tollgate-request-id': requestId },
  });
  assert.equal(res.status, 200);
  const reader = res.body!.getReader();
  const first = await reader.read();
  assert.equal(first.done, false);
  controller.abort();
  await reader.read().catch(() => undefined);
  await waitFor('the upstream connection to close', () => mock.aborted === 1, 3000);
  assert.equal(mock.requests.length, 1);
  // The access log records the request as one the client left: 499.
  let line: any;
  await waitFor('the access-log line', () => (line = accessLines().find((l) => l.request_id === requestId)) !== undefined);
  assert.equal(line.status, 499);
  assert.equal(line.error_kind, 'client_disconnected');
});

function accessLines(): any[] {
  return gw
    .stderrText()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l))
    .filter((l) => l.type === 'access');
}

test('a caller that leaves a non-streaming request while the upstream body is still coming closes the upstream request', async () => {
  // The head and a first piece of the body, then nothing for longer than the test waits.
  mock.script({ chunks: ['{"id":"chatcmpl-slow",', '"object":"chat.completion","choices":[]}'], chunkDelayMs: 8000 });
  const healthBefore = await targetHealth();
  const controller = new AbortController();
  const requestId = `e2e-abort-body-${Date.now()}`;
  const pending = fetch(`${gw.proxyUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${CALLER_KEY}`, 'x-tollgate-request-id': requestId },
    body: JSON.stringify({ model: 'fast', messages: hi }),
    signal: controller.signal,
  }).catch(() => undefined);
  await waitFor('the upstream request', () => mock.requests.length === 1, 3000);
  await new Promise((r) => setTimeout(r, 200));
  controller.abort();
  await pending;
  // Before, the gateway kept reading until upstream.timeout_ms (10 s here) with nobody waiting.
  await waitFor('the upstream connection to close', () => mock.aborted === 1, 2000);
  let line: any;
  await waitFor('the access-log line', () => (line = accessLines().find((l) => l.request_id === requestId)) !== undefined);
  assert.equal(line.status, 499);
  // A departed caller says nothing about the target: no success (and no latency) is recorded.
  const healthAfter = await targetHealth();
  assert.equal(healthAfter.in_flight, 0);
  assert.equal(healthAfter.latency_ewma_ms, healthBefore.latency_ewma_ms);
  assert.equal(healthAfter.consecutive_failures, healthBefore.consecutive_failures);
});

/** The health row of the fixture's one target, from /status/models. */
async function targetHealth(): Promise<{ in_flight: number; latency_ewma_ms: number | null; consecutive_failures: number }> {
  const res = await fetch(`${gw.metricsUrl}/status/models`);
  const rows = ((await res.json()) as { models: any[] }).models;
  assert.ok(rows.length <= 1, JSON.stringify(rows));
  // No row yet: the target has served nothing.
  return rows[0] ?? { in_flight: 0, latency_ewma_ms: null, consecutive_failures: 0 };
}

test('a stream that breaks after its head counts as a failure of the target, not a success', async () => {
  const before = await targetHealth();
  mock.script({ sse: chatChunks({ parts: ['Hello', ' world', '!'] }), disconnectAfterEvents: 2 });
  const res = await postStream();
  assert.equal(res.status, 200);
  await res.text();
  const after = await targetHealth();
  assert.equal(after.consecutive_failures, before.consecutive_failures + 1, JSON.stringify(after));
  assert.match((after as { last_error?: string }).last_error ?? '', /^transport/);
  // A stream delivered whole clears the streak.
  mock.script({ sse: chatChunks({ parts: ['ok'] }) });
  await (await postStream()).text();
  assert.equal((await targetHealth()).consecutive_failures, 0);
});

test('an upstream that goes silent after its in-band error event: one error frame, the upstream\'s', async () => {
  const [first, ...rest] = chatChunks({ parts: ['Hello', ' world'] });
  const error = { error: { message: 'slow down', type: 'rate_limit_error', code: 'rate_limit_exceeded' } };
  // The first event and the error in one write, then a gap longer than the stream timeout.
  mock.script({ sse: [`data: ${JSON.stringify(first)}\n\ndata: ${JSON.stringify(error)}\n\n`, ...rest], delayBetweenEventsMs: STREAM_TIMEOUT_MS + 600 });
  const res = await postStream();
  const events = sseEvents(await res.text());
  const errors = events.filter((e) => e.data.includes('"error"'));
  // Before, the stream timeout added the gateway's own upstream_timeout frame after the upstream's.
  assert.equal(errors.length, 1, JSON.stringify(events));
  assert.equal(JSON.parse(errors[0].data).error.type, 'rate_limit_error');
});
