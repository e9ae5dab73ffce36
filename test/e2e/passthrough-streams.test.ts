// E2E, spec 3 §3 (stream end states and what each records), §2.1 timeout_ms (headers, buffered
// bodies, first chunk and gaps of event streams) and §1 rule 3 (exactly one upstream attempt).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { Gateway } from '../harness/spawn.ts';
import { useProxyFixture } from '../harness/proxy-fixture.ts';
import { chatChunks, type MockUpstream } from '../harness/mock-upstream.ts';
import { rawRequest, usageOf, usageLinesOf } from '../harness/echo-upstream.ts';

const KEY = 'sk-pt-streams';
const TIMEOUT = 600;
let mock: MockUpstream;
let gw: Gateway;

useProxyFixture({
  resources: (m) => ({
    _format_version: '1',
    provider_keys: [{ display_name: 'up', provider: 'openai', api_key: 'sk-provider' }],
    api_keys: [{ display_name: 'caller', key_env: 'PT_KEY', allowed_models: [], allowed_routes: ['*'] }],
    passthrough_routes: [
      { name: 'r', path_prefix: '/passthrough/r', target_url: m, provider_key: 'up', timeout_ms: TIMEOUT },
      { name: 'dead', path_prefix: '/passthrough/dead', target_url: 'http://127.0.0.1:9', provider_key: 'up' },
    ],
  }),
  env: { PT_KEY: KEY },
  ready: (fx) => ({ mock, gw } = fx),
});

const chatBody = JSON.stringify({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'hi' }] });
const data = (o: object) => `data: ${JSON.stringify(o)}\n\n`;

function post(path = '/passthrough/r/v1/chat/completions') {
  return rawRequest(gw.proxyUrl, { method: 'POST', path, body: chatBody, headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' } });
}

const rid = (res: { headers: http.IncomingHttpHeaders }) => res.headers['x-tollgate-request-id'] as string;

test('delivered whole: the bytes arrive unchanged and the stream is recorded 200', async () => {
  const events = chatChunks({ usage: { prompt_tokens: 3, completion_tokens: 2 } });
  mock.script({ sse: events, headers: { 'x-upstream': 'yes' } });
  const res = await post();
  assert.equal(res.status, 200);
  assert.match(String(res.headers['content-type']), /^text\/event-stream/);
  assert.equal(res.headers['content-length'], undefined);
  assert.equal(res.headers['x-upstream'], 'yes');
  assert.equal(res.text, events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('') + 'data: [DONE]\n\n');
  const u = await usageOf(gw, rid(res));
  assert.equal(u.status, 200);
  assert.equal(u.stream, true);
  assert.equal(u.error_class, null);
  assert.equal(typeof u.ttft_ms, 'number');
});

test('a 15 MiB line written in 64 KiB pieces is relayed unchanged, and the usage event after it is read', async () => {
  const line = `data: "${'a'.repeat(15 * 1024 * 1024)}"`;
  const pieces: string[] = [];
  for (let at = 0; at < line.length; at += 64 * 1024) pieces.push(line.slice(at, at + 64 * 1024));
  const after = chatChunks({ usage: { prompt_tokens: 5, completion_tokens: 3 } });
  mock.script({ sse: [...pieces, '\n\n', ...after] });
  const res = await post();
  assert.equal(res.status, 200);
  const expected = `${line}\n\n` + after.map((e) => data(e)).join('') + 'data: [DONE]\n\n';
  assert.ok(res.text === expected, `${res.text.length} characters came back, ${expected.length} sent`);
  const u = await usageOf(gw, rid(res));
  assert.equal(u.status, 200);
  assert.equal(u.prompt_tokens, 5);
  assert.equal(u.completion_tokens, 3);
});

test('the stream is relayed as it arrives: the first event reaches the caller before the upstream finishes', async () => {
  mock.script({ sse: chatChunks(), delayBetweenEventsMs: 250 });
  const started = Date.now();
  const first = await new Promise<number>((resolve, reject) => {
    const req = http.request(`${gw.proxyUrl}/passthrough/r/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${KEY}` } }, (res) => {
      res.once('data', () => resolve(Date.now() - started));
      res.resume();
    });
    req.once('error', reject);
    req.end(chatBody);
  });
  assert.ok(first < 400, `first event after ${first} ms; the whole stream takes over 1 s`);
  await mock.waitForRequests(1);
});

test('the caller leaves mid-stream: recorded 499, the upstream is released', async () => {
  mock.script({ sse: [...chatChunks(), ...chatChunks()], delayBetweenEventsMs: 200 });
  const id = await new Promise<string>((resolve, reject) => {
    const req = http.request(`${gw.proxyUrl}/passthrough/r/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${KEY}` } }, (res) => {
      res.once('data', () => {
        resolve(res.headers['x-tollgate-request-id'] as string);
        req.destroy();
      });
    });
    req.once('error', () => undefined);
    req.end(chatBody);
    setTimeout(() => reject(new Error('no first event')), 5000);
  });
  const u = await usageOf(gw, id);
  assert.equal(u.status, 499);
  assert.equal(u.error_class, 'client_disconnected');
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(mock.aborted, 1, 'the upstream request was cancelled');
});

test('an upstream break mid-stream: recorded 502, the stream ends with an error event', async () => {
  const events = chatChunks();
  mock.script({ sse: events, disconnectAfterEvents: 2 });
  const res = await post();
  assert.equal(res.status, 200);
  const relayed = events.slice(0, 2).map((e) => `data: ${JSON.stringify(e)}\n\n`).join('');
  assert.ok(res.text.startsWith(relayed), 'the events before the break are relayed unchanged');
  const tail = res.text.slice(relayed.length);
  assert.match(tail, /event: error\ndata: /);
  const frame = JSON.parse(tail.split('data: ')[1]);
  assert.equal(frame.error.code, 'upstream_transport');
  const u = await usageOf(gw, rid(res));
  assert.equal(u.status, 502);
  assert.equal(u.error_class, 'transport');
});

test('an upstream break before the first event is an ordinary 502 response', async () => {
  mock.script({ sse: chatChunks(), disconnectAfterEvents: 0 });
  const res = await post();
  assert.equal(res.status, 502);
  assert.equal(JSON.parse(res.text).error.code, 'upstream_transport');
  assert.equal((await usageOf(gw, rid(res))).status, 502);
});

test('an in-stream error is recorded 502; an in-stream 4xx keeps its status', async () => {
  mock.script({ sse: [data({ type: 'message_start', message: { usage: { input_tokens: 1 } } }), `event: error\n${data({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })}`], done: false });
  const overloaded = await post();
  assert.equal(overloaded.status, 200);
  assert.match(overloaded.text, /overloaded_error/);
  const a = await usageOf(gw, rid(overloaded));
  assert.equal(a.status, 502);
  assert.equal(a.error_class, 'upstream_in_band');
  // The upstream's own text is relayed to the caller but never logged: it may hold anything.
  assert.equal(a.error_message, 'upstream sent an error event mid-stream');

  mock.script({ sse: [data({ error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' } })], done: false });
  const limited = await post();
  const b = await usageOf(gw, rid(limited));
  assert.equal(b.status, 429);
  assert.equal(b.error_class, 'upstream_in_band');
});

test('read timeout mid-stream: recorded 504, the stream ends with an error event', async () => {
  mock.script({ sse: [data({ n: 1 }), data({ n: 2 })], delayBetweenEventsMs: TIMEOUT + 600, done: false });
  const res = await post();
  assert.equal(res.status, 200);
  assert.ok(res.text.startsWith(data({ n: 1 })));
  assert.match(res.text, /event: error\ndata: .*upstream_timeout/);
  assert.match(res.text, new RegExp(`upstream stream timed out after ${TIMEOUT}ms without data`));
  const u = await usageOf(gw, rid(res));
  assert.equal(u.status, 504);
  assert.equal(u.error_class, 'timeout');
});

test('timeout_ms bounds the wait for the first chunk: a stall before it is a 504 response', async () => {
  mock.script({ sse: [data({ n: 1 })], delayFirstEventMs: TIMEOUT + 600 });
  const res = await post();
  assert.equal(res.status, 504);
  assert.equal(JSON.parse(res.text).error.code, 'upstream_timeout');
  assert.equal((await usageOf(gw, rid(res))).status, 504);
});

test('timeout_ms bounds each gap, not the lifetime: a slow but steady stream completes', async () => {
  const events = Array.from({ length: 6 }, (_, n) => data({ n }));
  mock.script({ sse: events, delayBetweenEventsMs: Math.floor(TIMEOUT / 2) });
  const started = Date.now();
  const res = await post();
  assert.ok(Date.now() - started > TIMEOUT * 2, 'the stream outlived the timeout');
  assert.equal(res.text, events.join('') + 'data: [DONE]\n\n');
  assert.equal((await usageOf(gw, rid(res))).status, 200);
});

test('timeout_ms bounds the response head: 504 "upstream request timed out after <n>ms"', async () => {
  mock.script({ json: {}, delayHeadersMs: TIMEOUT + 600 });
  const res = await post('/passthrough/r/v1/files');
  assert.equal(res.status, 504);
  assert.deepEqual(JSON.parse(res.text), { error: { message: `upstream request timed out after ${TIMEOUT}ms`, type: 'timeout_error', param: null, code: 'upstream_timeout' } });
  const u = await usageOf(gw, rid(res));
  assert.equal(u.status, 504);
  assert.equal(u.error_class, 'timeout');
});

test('timeout_ms bounds a non-event-stream body read', async () => {
  mock.script({ chunks: ['{"data":', '[]}'], chunkDelayMs: TIMEOUT + 600 });
  const res = await post('/passthrough/r/v1/files');
  assert.equal(res.status, 504);
  assert.equal(JSON.parse(res.text).error.code, 'upstream_timeout');
});

test('an upstream connection broken during a buffered body is a 502 response', async () => {
  mock.script({ sse: ['{"partial":'], headers: { 'content-type': 'application/json' }, disconnectAfterEvents: 1 });
  const res = await post('/passthrough/r/v1/files');
  assert.equal(res.status, 502);
  assert.equal(JSON.parse(res.text).error.code, 'upstream_transport');
});

test('rule 3: an upstream 5xx is relayed after exactly one attempt, and the route keeps serving', async () => {
  mock.script({ status: 503, json: { error: { message: 'overloaded' } } });
  const res = await post('/passthrough/r/v1/files');
  assert.equal(res.status, 503);
  assert.deepEqual(JSON.parse(res.text), { error: { message: 'overloaded' } });
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(mock.requests.length, 1);
  mock.script({ json: { ok: true } });
  assert.equal((await post('/passthrough/r/v1/files')).status, 200, 'no cooldown after a failure');
  assert.equal(mock.requests.length, 2);
});

test('rule 3: a transport failure is one attempt and a 502 response', async () => {
  mock.script({ destroyBeforeHeaders: true });
  const res = await post('/passthrough/r/v1/files');
  assert.equal(res.status, 502);
  assert.equal(JSON.parse(res.text).error.code, 'upstream_transport');
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(mock.requests.length, 1);
  const u = await usageOf(gw, rid(res));
  assert.equal(u.status, 502);
  assert.equal(u.error_class, 'transport');
  assert.equal((await usageLinesOf(gw, rid(res), 0)).length, 1);
});

test('an unreachable target is a 502 naming only its origin', async () => {
  const res = await post('/passthrough/dead/x');
  assert.equal(res.status, 502);
  const e = JSON.parse(res.text).error;
  assert.equal(e.code, 'upstream_transport');
  assert.match(e.message, /^upstream http:\/\/127\.0\.0\.1:9 unreachable/);
});
