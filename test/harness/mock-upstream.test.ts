import { test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import OpenAI from 'openai';
import { startMockUpstream, chatCompletion, chatChunks, type MockUpstream } from './mock-upstream.ts';

// Timers may fire a hair early relative to performance.now(); allow a little slack.
const SLACK_MS = 5;

let mock: MockUpstream;

before(async () => {
  mock = await startMockUpstream();
});
after(async () => {
  await mock.close();
});
beforeEach(() => {
  mock.reset();
});

function post(path: string, body: unknown, init: RequestInit = {}): Promise<Response> {
  return fetch(mock.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
    body: JSON.stringify(body),
    ...init,
  });
}

/** Raw GET with node:http, returning each body chunk with the time it arrived. */
function rawGet(path: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; chunks: Array<{ at: number; text: string }> }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    http
      .get(mock.url + path, { agent: false }, (res) => {
        const chunks: Array<{ at: number; text: string }> = [];
        res.on('data', (c: Buffer) => chunks.push({ at: performance.now() - t0, text: c.toString() }));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, chunks }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

async function poll(cond: () => boolean, what: string, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

test('listens on 127.0.0.1 with a real port', () => {
  assert.ok(mock.port > 0);
  assert.equal(mock.url, `http://127.0.0.1:${mock.port}`);
});

test('default fallback answers a chat.completion echoing the requested model', async () => {
  const res = await post('/v1/chat/completions', { model: 'my-model-7', messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type')!, /^application\/json/);
  const body = (await res.json()) as any;
  assert.equal(body.object, 'chat.completion');
  assert.equal(body.model, 'my-model-7');
  assert.match(body.id, /^chatcmpl-/);
});

test('records method, url, headers, full body and parsed json', async () => {
  const big = 'x'.repeat(200_000); // spans many TCP reads
  await post('/v1/chat/completions?a=1', { model: 'm', messages: [{ role: 'user', content: big }] }, {
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-abc', 'x-custom': 'yes' },
  });
  await fetch(mock.url + '/plain', { method: 'PUT', body: 'not json' });
  assert.equal(mock.requests.length, 2);
  const [a, b] = mock.requests;
  assert.equal(a.method, 'POST');
  assert.equal(a.url, '/v1/chat/completions?a=1');
  assert.equal(a.headers.authorization, 'Bearer sk-abc');
  assert.equal(a.headers['x-custom'], 'yes');
  assert.equal(a.json.messages[0].content, big);
  assert.equal(a.body, JSON.stringify({ model: 'm', messages: [{ role: 'user', content: big }] }));
  assert.equal(b.method, 'PUT');
  assert.equal(b.body, 'not json');
  assert.equal(b.json, undefined);
});

test('scripted replies are consumed in order, then the fallback answers', async () => {
  mock.script({ status: 429, json: { error: { message: 'slow down' } }, headers: { 'retry-after': '3' } }, (req, index) => ({
    json: { seen: req.json.n, index },
  }));
  const r1 = await post('/x', { n: 1 });
  assert.equal(r1.status, 429);
  assert.equal(r1.headers.get('retry-after'), '3');
  assert.deepEqual(await r1.json(), { error: { message: 'slow down' } });
  const r2 = await post('/x', { n: 2 });
  assert.deepEqual(await r2.json(), { seen: 2, index: 1 });
  const r3 = await post('/x', { model: 'after-queue' });
  assert.equal(((await r3.json()) as any).model, 'after-queue');
});

test('setFallback replaces the fallback and reset restores the default', async () => {
  mock.setFallback({ status: 503, body: 'down' });
  assert.equal((await post('/x', {})).status, 503);
  assert.equal((await post('/x', {})).status, 503);
  mock.reset();
  assert.equal(mock.requests.length, 0);
  const res = await post('/x', { model: 'back' });
  assert.equal(res.status, 200);
  assert.equal(((await res.json()) as any).model, 'back');
});

test('reset drops queued replies', async () => {
  mock.script({ status: 500 });
  mock.reset();
  assert.equal((await post('/x', {})).status, 200);
});

test('an async script function is awaited; a throwing one answers 500 naming the error', async () => {
  mock.script(
    async () => {
      await new Promise((r) => setTimeout(r, 20));
      return { status: 201, body: 'later' };
    },
    () => {
      throw new Error('boom in script');
    },
  );
  const r1 = await post('/x', {});
  assert.equal(r1.status, 201);
  assert.equal(await r1.text(), 'later');
  const r2 = await post('/x', {});
  assert.equal(r2.status, 500);
  assert.match(await r2.text(), /boom in script/);
});

test('raw body is sent as given, with headers overriding defaults', async () => {
  mock.script({ status: 502, body: Buffer.from('<html>bad gateway</html>'), headers: { 'Content-Type': 'text/html' } });
  const res = await post('/x', {});
  assert.equal(res.status, 502);
  assert.equal(res.headers.get('content-type'), 'text/html');
  assert.equal(await res.text(), '<html>bad gateway</html>');
});

test('sse writes objects as data frames, strings verbatim, then [DONE]', async () => {
  mock.script({ sse: [{ a: 1 }, ': keep-alive comment\n\n', 'event: ping\ndata: {}\n\n', { b: 'two' }] });
  const res = await post('/x', {});
  assert.equal(res.headers.get('content-type'), 'text/event-stream');
  assert.equal(
    await res.text(),
    'data: {"a":1}\n\n: keep-alive comment\n\nevent: ping\ndata: {}\n\ndata: {"b":"two"}\n\ndata: [DONE]\n\n',
  );
});

test('sse with done: false omits [DONE]', async () => {
  mock.script({ sse: [{ a: 1 }], done: false });
  assert.equal(await (await post('/x', {})).text(), 'data: {"a":1}\n\n');
});

test('delayHeadersMs holds back the status line', async () => {
  mock.script({ delayHeadersMs: 150, json: {} });
  const t0 = performance.now();
  const res = await post('/x', {});
  assert.ok(performance.now() - t0 >= 150 - SLACK_MS, 'headers came too early');
  assert.equal(res.status, 200);
});

test('delayFirstEventMs: headers arrive first, the first event after the delay', async () => {
  mock.script({ sse: [{ a: 1 }], delayFirstEventMs: 300 });
  const t0 = performance.now();
  const res = await post('/x', {});
  const tHeaders = performance.now() - t0;
  const reader = res.body!.getReader();
  const first = await reader.read();
  const tFirst = performance.now() - t0;
  assert.ok(tHeaders < 250, `headers took ${tHeaders} ms`);
  assert.ok(tFirst >= 300 - SLACK_MS, `first event after ${tFirst} ms`);
  assert.match(new TextDecoder().decode(first.value), /^data: \{"a":1\}/);
  await reader.cancel();
});

test('delayBetweenEventsMs spaces the events out', async () => {
  mock.script({ sse: [{ n: 1 }, { n: 2 }, { n: 3 }], delayBetweenEventsMs: 60, done: false });
  const { chunks } = await rawGet('/x');
  const texts = chunks.map((c) => c.text);
  assert.deepEqual(texts, ['data: {"n":1}\n\n', 'data: {"n":2}\n\n', 'data: {"n":3}\n\n']);
  assert.ok(chunks[1].at - chunks[0].at >= 60 - SLACK_MS);
  assert.ok(chunks[2].at - chunks[1].at >= 60 - SLACK_MS);
  assert.ok(chunks[2].at >= 120 - SLACK_MS);
});

test('disconnectAfterEvents cuts the stream after N events without a clean end', async () => {
  mock.script({ sse: chatChunks({ parts: ['a', 'b', 'c'] }), disconnectAfterEvents: 2 });
  const res = await post('/x', {});
  const reader = res.body!.getReader();
  let text = '';
  await assert.rejects(async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      text += new TextDecoder().decode(value);
    }
  });
  assert.equal(text.split('\n\n').filter(Boolean).length, 2);
  assert.doesNotMatch(text, /\[DONE\]/);
  await new Promise((r) => setTimeout(r, 50)); // let the server-side close event fire
  assert.equal(mock.aborted, 0, 'the mock cutting the stream is not a client abort');
});

test('destroyBeforeHeaders resets the connection without answering', async () => {
  mock.script({ destroyBeforeHeaders: true });
  await assert.rejects(post('/x', {}));
  assert.equal(mock.requests.length, 1);
  // The next request still works (new connection).
  assert.equal((await post('/x', {})).status, 200);
});

test('chunks are written piece by piece with chunkDelayMs between them', async () => {
  const json = JSON.stringify(chatCompletion({ content: 'split' }));
  const cut = [json.slice(0, 10), json.slice(10, 40), json.slice(40)];
  mock.script({ chunks: cut, chunkDelayMs: 50 });
  const { status, headers, chunks } = await rawGet('/x');
  assert.equal(status, 200);
  assert.equal(headers['content-type'], 'application/json');
  assert.equal(headers['transfer-encoding'], 'chunked');
  assert.deepEqual(
    chunks.map((c) => c.text),
    cut,
  );
  assert.ok(chunks[2].at - chunks[0].at >= 100 - SLACK_MS);
  assert.equal(JSON.parse(chunks.map((c) => c.text).join('')).choices[0].message.content, 'split');
});

test('aborted counts clients that leave before the reply finished', async () => {
  mock.script({ sse: [{ n: 1 }, { n: 2 }], delayBetweenEventsMs: 5000 }, { delayHeadersMs: 5000, json: {} });
  const ac1 = new AbortController();
  const res = await post('/x', {}, { signal: ac1.signal });
  const reader = res.body!.getReader();
  await reader.read();
  ac1.abort();
  await poll(() => mock.aborted === 1, 'first abort');

  const ac2 = new AbortController();
  const pending = post('/x', {}, { signal: ac2.signal });
  await mock.waitForRequests(2);
  ac2.abort();
  await assert.rejects(pending);
  await poll(() => mock.aborted === 2, 'second abort');

  // A completed request does not count.
  await post('/x', {});
  assert.equal(mock.aborted, 2);
});

test('a request from before a reset that is cut after it is not counted', async () => {
  mock.script({ delayHeadersMs: 5000, json: {} });
  const ac = new AbortController();
  const pending = post('/x', {}, { signal: ac.signal });
  await mock.waitForRequests(1);
  mock.reset();
  ac.abort();
  await assert.rejects(pending);
  // The cut request after it, which does count, shows the first one's close has been handled.
  mock.script({ delayHeadersMs: 5000, json: {} });
  const ac2 = new AbortController();
  const pending2 = post('/x', {}, { signal: ac2.signal });
  await mock.waitForRequests(1);
  ac2.abort();
  await assert.rejects(pending2);
  await poll(() => mock.aborted >= 1, 'second abort');
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(mock.aborted, 1);
  assert.equal(mock.requests.length, 1);
});

test('waitForRequests resolves on arrival and rejects on timeout', async () => {
  const waiting = mock.waitForRequests(2, 2000);
  await post('/x', {});
  await post('/x', {});
  await waiting;
  await mock.waitForRequests(1); // already satisfied
  await assert.rejects(mock.waitForRequests(3, 50), /wanted 3 requests, got 2/);
});

test('close() does not hang on idle keep-alive or in-flight connections', async () => {
  const m = await startMockUpstream();
  const agent = new http.Agent({ keepAlive: true });
  await new Promise<void>((resolve, reject) => {
    http.get(m.url + '/idle', { agent }, (res) => {
      res.resume();
      res.on('end', resolve);
    }).on('error', reject);
  });
  m.script({ sse: [{ n: 1 }, { n: 2 }], delayBetweenEventsMs: 60_000 });
  const stuck = fetch(m.url + '/stuck').then((r) => r.text());
  stuck.catch(() => {});
  await m.waitForRequests(2);
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    m.close().then(() => 'closed'),
    new Promise((r) => (timer = setTimeout(() => r('hung'), 2000))),
  ]);
  clearTimeout(timer);
  assert.equal(outcome, 'closed', 'close() hung on open connections');
  await assert.rejects(stuck);
  assert.equal(m.aborted, 0, 'closing the mock is not a client abort');
  await assert.rejects(fetch(m.url + '/after'));
  agent.destroy();
});

test('chatCompletion has the OpenAI wire shape', () => {
  const c = chatCompletion({ model: 'gpt-x', content: 'yo', usage: { prompt_tokens: 3, completion_tokens: 4 } }) as any;
  assert.match(c.id, /^chatcmpl-[A-Za-z0-9_-]+$/);
  assert.equal(c.object, 'chat.completion');
  assert.equal(typeof c.created, 'number');
  assert.ok(Math.abs(c.created - Date.now() / 1000) < 5, 'created is in seconds');
  assert.equal(c.model, 'gpt-x');
  assert.equal(typeof c.system_fingerprint, 'string');
  assert.deepEqual(c.choices[0].message, { role: 'assistant', content: 'yo', refusal: null, annotations: [] });
  assert.equal(c.choices[0].finish_reason, 'stop');
  assert.equal(c.usage.prompt_tokens, 3);
  assert.equal(c.usage.completion_tokens, 4);
  assert.equal(c.usage.total_tokens, 7);
  assert.notEqual((chatCompletion() as any).id, (chatCompletion() as any).id);
});

test('chatCompletion with tool_calls: null content, finish_reason tool_calls', () => {
  const call = { id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } };
  const c = chatCompletion({ tool_calls: [call] }) as any;
  assert.equal(c.choices[0].message.content, null);
  assert.deepEqual(c.choices[0].message.tool_calls, [call]);
  assert.equal(c.choices[0].finish_reason, 'tool_calls');
  assert.equal((chatCompletion({ tool_calls: [call], finish_reason: 'stop' }) as any).choices[0].finish_reason, 'stop');
});

test('chatChunks: role chunk, content chunks, finish chunk, optional usage-only chunk', () => {
  const noUsage = chatChunks({ parts: ['a', 'b'], model: 'm', id: 'chatcmpl-fixed' }) as any[];
  assert.equal(noUsage.length, 4);
  for (const ch of noUsage) {
    assert.equal(ch.id, 'chatcmpl-fixed');
    assert.equal(ch.object, 'chat.completion.chunk');
    assert.equal(ch.model, 'm');
    assert.equal('usage' in ch, false);
  }
  assert.equal(noUsage[0].choices[0].delta.role, 'assistant');
  assert.deepEqual(
    noUsage.slice(1, 3).map((c) => c.choices[0].delta.content),
    ['a', 'b'],
  );
  assert.equal(noUsage[3].choices[0].finish_reason, 'stop');
  assert.deepEqual(noUsage[3].choices[0].delta, {});

  const withUsage = chatChunks({ parts: ['a'], usage: { prompt_tokens: 5, completion_tokens: 1 } }) as any[];
  assert.equal(withUsage.length, 4);
  const last = withUsage.at(-1);
  assert.deepEqual(last.choices, []);
  assert.equal(last.usage.total_tokens, 6);
  assert.equal(withUsage[0].usage, null);
  assert.equal((chatChunks({ usage: null }) as any[]).length, 5);
});

test('the official openai SDK parses a completion and a stream from the mock', async () => {
  const client = new OpenAI({ apiKey: 'sk-sdk-test', baseURL: `${mock.url}/v1`, maxRetries: 0 });

  mock.script({ json: chatCompletion({ model: 'gpt-4o', content: 'Hi there', usage: { prompt_tokens: 9, completion_tokens: 2 } }) });
  const completion = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] });
  assert.equal(completion.choices[0].message.content, 'Hi there');
  assert.equal(completion.usage?.total_tokens, 11);
  assert.equal(mock.requests[0].url, '/v1/chat/completions');
  assert.equal(mock.requests[0].headers.authorization, 'Bearer sk-sdk-test');
  assert.equal(mock.requests[0].json.messages[0].content, 'hello');

  mock.script({ sse: chatChunks({ model: 'gpt-4o', parts: ['Str', 'eam', 'ed'], usage: { prompt_tokens: 4, completion_tokens: 3 } }) });
  const stream = await client.chat.completions.create({
    model: 'gpt-4o',
    messages: [{ role: 'user', content: 'stream it' }],
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let usage: OpenAI.CompletionUsage | null | undefined;
  let finish: string | null = null;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(text, 'Streamed');
  assert.equal(finish, 'stop');
  assert.equal(usage?.completion_tokens, 3);
  assert.equal(mock.requests[1].json.stream, true);
});
