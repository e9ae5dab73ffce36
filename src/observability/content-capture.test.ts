import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { RequestContext } from '../http/context.ts';
import { readBody } from '../http/body.ts';
import { endStream, relayChunk, sendJson, startStream, writeChunk } from '../http/respond.ts';
import { ContentCapture, headerIn } from './content-capture.ts';
import type { CapturedContent } from './content-text.ts';

type Handler = (ctx: RequestContext) => Promise<void> | void;

let server: http.Server;
let url: string;
let handler: Handler;
let limit = 131072;
let captured: Promise<{ content: CapturedContent; body: Buffer | undefined; kept: Buffer | undefined }>;

before(async () => {
  server = http.createServer((req, res) => {
    const ctx = new RequestContext(req, res, 'req-1', '127.0.0.1');
    ctx.capture = new ContentCapture(res, limit);
    let body: Buffer | undefined;
    let kept: Buffer | undefined;
    captured = new Promise((resolve) => {
      res.once('close', () => resolve({ content: ctx.capture!.content(), body, kept }));
    });
    void (async () => {
      body = await readBody(ctx, 0);
      kept = ctx.capture!.request;
      await handler(ctx);
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
after(() => new Promise<void>((resolve) => server.close(() => resolve())));

async function call(h: Handler, requestBody = '{"messages":[{"role":"user","content":"héllo"}]}', max = 131072): Promise<{ content: CapturedContent; body: Buffer | undefined; kept: Buffer | undefined; received: Buffer }> {
  handler = h;
  limit = max;
  const res = await fetch(url, { method: 'POST', body: requestBody, headers: { 'accept-encoding': 'identity' } });
  const received = Buffer.from(await res.arrayBuffer());
  return { ...(await captured), received };
}

const chunk = (content: string): string => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;

test('readBody keeps the request body by reference; the JSON answer of sendJson is extracted', async () => {
  const r = await call((ctx) => sendJson(ctx, 200, { object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'Bonjour' } }] }));
  assert.equal(r.kept, r.body, 'the same Buffer, no copy');
  assert.deepEqual(r.content, { request: '{"messages":[{"role":"user","content":"héllo"}]}', response: 'Bonjour', truncated: false });
});

test('a stream written with writeChunk and relayChunk is extracted as it passes, beyond the raw limit', async () => {
  // 40 events of ~100 bytes of framing each, 2 characters of text each: 4 KB of stream, 80 bytes of text.
  const pieces = Array.from({ length: 40 }, (_, i) => String(i % 10).repeat(2));
  const r = await call((ctx) => {
    startStream(ctx, 200, { 'content-type': 'text/event-stream' });
    const source = { pause() {}, resume() {} };
    for (const p of pieces) {
      const text = chunk(p);
      // Split inside an event, the way upstream chunks arrive.
      writeChunk(ctx, text.slice(0, 17));
      relayChunk(ctx, Buffer.from(text.slice(17)), source, () => true);
    }
    writeChunk(ctx, 'data: [DONE]\n\n');
    endStream(ctx);
  }, '{}', 256);
  assert.ok(r.received.length > 256 * 4, 'the caller got the whole stream');
  assert.deepEqual(r.content, { request: '{}', response: pieces.join(''), truncated: false });
});

test('pass-through style: writeHead with a raw header list and end(buffer), gzip-encoded', async () => {
  const json = JSON.stringify({ type: 'message', role: 'assistant', content: [{ type: 'text', text: 'compressed answer' }] });
  const r = await call((ctx) => {
    ctx.res.writeHead(200, ['Content-Type', 'application/json', 'Content-Encoding', 'gzip']);
    ctx.res.end(gzipSync(json));
  });
  assert.equal(r.content.response, 'compressed answer');
});

test('the limit bounds both sides: request and raw response cut on a character, truncated marked', async () => {
  const r = await call((ctx) => {
    ctx.res.writeHead(200, { 'content-type': 'text/plain' });
    ctx.res.write('ab');
    ctx.res.write('cd🌍');
    ctx.res.end('efgh');
  }, 'xyzé-request', 5);
  assert.equal(r.received.toString(), 'abcd🌍efgh', 'the caller is not affected');
  assert.deepEqual(r.content, { request: 'xyzé', response: 'abcd', truncated: true });
});

test('nothing written and no body: empty strings, not truncated', async () => {
  const r = await call((ctx) => {
    ctx.res.writeHead(204).end();
  }, '');
  assert.deepEqual(r.content, { request: '', response: '', truncated: false });
});

test('headerIn reads maps, flat raw lists and pair lists, case-insensitively', () => {
  assert.equal(headerIn({ 'Content-Type': 'a/b' }, 'content-type'), 'a/b');
  assert.equal(headerIn(['X', '1', 'content-encoding', 'gzip'], 'content-encoding'), 'gzip');
  assert.equal(headerIn([['Content-Type', 'text/event-stream']], 'content-type'), 'text/event-stream');
  assert.equal(headerIn(undefined, 'content-type'), undefined);
});
