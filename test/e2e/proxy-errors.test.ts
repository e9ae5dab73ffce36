// E2E: errors of the proxy listener (spec 2 §7, docs/errors.md): unrouted paths, wrong methods,
// oversized and malformed bodies, and every way an upstream can fail before a response starts
// (status relay, body suppression, timeouts, unreachable hosts, undecodable bodies).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import OpenAI from 'openai';
import type { Gateway } from '../harness/spawn.ts';
import { useProxyFixture } from '../harness/proxy-fixture.ts';
import type { MockUpstream } from '../harness/mock-upstream.ts';
import { logLines, waitForLines } from '../harness/log-lines.ts';

const CALLER_KEY = 'sk-e2e-errors-caller-8d2e';
const UPSTREAM_SECRET = 'sk-upstream-secret';
const BODY_LIMIT = 2048;
const TIMEOUT_MS = 600;
const REQUEST_TIMEOUT_MS = 1200;

let mock: MockUpstream;
let gw: Gateway;
let client: OpenAI;

/** A port nothing listens on: bind an ephemeral one, then close it. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

useProxyFixture({
  config: {
    proxy: { request_body_limit_bytes: BODY_LIMIT, request_timeout_ms: REQUEST_TIMEOUT_MS },
    // One attempt per request: these tests pin single-attempt outcomes (retries: test/e2e/routing-*.test.ts).
    upstream: { timeout_ms: TIMEOUT_MS, connect_timeout_ms: 2000, retries: 0 },
  },
  resources: async (mockUrl) => {
    const deadPort = await closedPort();
    return {
      _format_version: '1',
      provider_keys: [
        { display_name: 'up', provider: 'openai', api_key: UPSTREAM_SECRET, api_base: `${mockUrl}/v1` },
        { display_name: 'dead', provider: 'openai', api_key: 'sk-dead-secret', api_base: `http://127.0.0.1:${deadPort}/v1` },
      ],
      models: [
        { display_name: 'fast', provider: 'openai', model_name: 'gpt-4o-mini', provider_key: 'up' },
        { display_name: 'unreachable', provider: 'openai', model_name: 'gpt-4o-mini', provider_key: 'dead' },
      ],
      api_keys: [{ display_name: 'caller', key_env: 'E2E_ERRORS_KEY', allowed_models: ['*'] }],
    };
  },
  env: { E2E_ERRORS_KEY: CALLER_KEY },
  callerKey: CALLER_KEY,
  ready: (fx) => ({ mock, gw, client } = fx),
});

const hi = [{ role: 'user' as const, content: 'hi' }];
const auth = { authorization: `Bearer ${CALLER_KEY}` };

function postChat(body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${gw.proxyUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...auth, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function errorBody(res: Response, status: number): Promise<{ message: string; type: string; code: string | null; param: string | null }> {
  const text = await res.text();
  assert.equal(res.status, status, text);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  const body = JSON.parse(text);
  assert.equal(typeof body.error, 'object', text);
  return body.error;
}

// ---- routing ----

test('an unrouted path is 404 with an empty body, whatever the method', async () => {
  const cases: Array<[string, string]> = [
    ['GET', '/'],
    ['GET', '/v1/nope'],
    ['POST', '/v1/chat/completion'],
    ['POST', '/v1/chat/completions/extra'],
    ['DELETE', '/admin'],
  ];
  for (const [method, path] of cases) {
    const res = await fetch(gw.proxyUrl + path, { method, headers: auth });
    assert.equal(res.status, 404, `${method} ${path}`);
    assert.equal(await res.text(), '', `${method} ${path}`);
    assert.ok(res.headers.get('x-tollgate-request-id'), `${method} ${path}: request id`);
  }
  assert.equal(mock.requests.length, 0);
});

test('a request target with a "#" is no typed route: 404 with an empty body, nothing upstream', async () => {
  // fetch drops a fragment before sending; the raw client sends the target as written.
  const raw = (method: string, path: string) => new Promise<{ status: number; body: string }>((resolve, reject) => {
    const u = new URL(gw.proxyUrl);
    const body = method === 'POST' ? JSON.stringify({ model: 'fast', messages: hi }) : undefined;
    const req = http.request({ host: u.hostname, port: Number(u.port), method, path, agent: false, headers: { ...auth, 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.once('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.once('error', reject);
    req.end(body);
  });
  for (const [method, path] of [['POST', '/v1/chat/completions#x'], ['POST', '/v1/chat/completions?a=1#x'], ['GET', '/v1/models#'], ['GET', '/livez?#']]) {
    const res = await raw(method, path);
    assert.equal(res.status, 404, `${method} ${path}: ${res.body}`);
    assert.equal(res.body, '', `${method} ${path}`);
  }
  assert.equal(mock.requests.length, 0);
});

test('a known path with the wrong method is 405 with Allow', async () => {
  const res = await fetch(`${gw.proxyUrl}/v1/chat/completions`, { headers: auth });
  const err = await errorBody(res, 405);
  assert.equal(res.headers.get('allow'), 'POST');
  assert.equal(err.type, 'invalid_request_error');
  assert.equal(err.code, null);
  for (const method of ['PUT', 'DELETE']) {
    const r = await fetch(`${gw.proxyUrl}/v1/chat/completions`, { method, headers: auth });
    assert.equal(r.status, 405, method);
    assert.equal(r.headers.get('allow'), 'POST', method);
    await r.arrayBuffer();
  }
  const models = await fetch(`${gw.proxyUrl}/v1/models`, { method: 'POST', headers: auth });
  assert.equal(models.status, 405);
  assert.equal(models.headers.get('allow'), 'GET, HEAD');
  await models.arrayBuffer();
  assert.equal(mock.requests.length, 0);
});

test('HEAD /v1/models answers as GET does, without the body', async () => {
  const get = await fetch(`${gw.proxyUrl}/v1/models`, { headers: auth });
  const listed = await get.text();
  const head = await fetch(`${gw.proxyUrl}/v1/models`, { method: 'HEAD', headers: { ...auth, 'x-tollgate-request-id': 'e2e-head-models' } });
  assert.equal(head.status, 200);
  assert.equal(head.headers.get('content-type'), get.headers.get('content-type'));
  assert.equal(head.headers.get('content-length'), String(Buffer.byteLength(listed)));
  assert.equal(await head.text(), '');
  const [line] = await waitForLines(gw, 'access', (l) => l.request_id === 'e2e-head-models');
  assert.equal(line.method, 'HEAD');
  assert.equal(line.response_body_bytes, 0, 'no body was sent');
  const anonymous = await fetch(`${gw.proxyUrl}/v1/models`, { method: 'HEAD' });
  assert.equal(anonymous.status, 401);
});

// ---- request bodies ----

function paddedBody(totalBytes: number): string {
  const base = JSON.stringify({ model: 'fast', messages: [{ role: 'user', content: '' }] });
  return JSON.stringify({ model: 'fast', messages: [{ role: 'user', content: 'x'.repeat(totalBytes - base.length) }] });
}

test('a body over proxy.request_body_limit_bytes is 413, nothing upstream', async () => {
  const big = paddedBody(BODY_LIMIT + 1);
  assert.equal(Buffer.byteLength(big), BODY_LIMIT + 1);
  const err = await errorBody(await postChat(big), 413);
  assert.equal(err.message, `request body exceeds ${BODY_LIMIT}-byte limit`);
  assert.equal(err.type, 'invalid_request_error');
  assert.equal(err.code, 'request_too_large');
  assert.equal(mock.requests.length, 0);
});

test('a chunked body (no content-length) over the limit is 413 too', async () => {
  // node:http, not fetch: the gateway may answer (and close) while the client is still sending,
  // so the client writes past the limit, then waits for the answer instead of racing it.
  const url = new URL(`${gw.proxyUrl}/v1/chat/completions`);
  const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = http.request({ hostname: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { 'content-type': 'application/json', ...auth } });
    req.on('error', reject);
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, text });
        req.destroy();
      });
    });
    req.write('{"model":"fast","messages":[{"role":"user","content":"');
    for (let i = 0; i < 3; i++) req.write('x'.repeat(1024));
  });
  assert.equal(status, 413, text);
  assert.equal(JSON.parse(text).error.code, 'request_too_large');
  assert.equal(mock.requests.length, 0);
});

/** Sends a head with `Expect: 100-continue` and no body; resolves with what arrives before the body would be sent. */
function expectContinue(contentLength: number): Promise<string> {
  const url = new URL(gw.proxyUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname, () => {
      socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${CALLER_KEY}\r\nContent-Type: application/json\r\nContent-Length: ${contentLength}\r\nExpect: 100-continue\r\n\r\n`);
    });
    let got = '';
    socket.setEncoding('latin1');
    socket.on('error', reject);
    socket.on('data', (d: string) => {
      got += d;
      if (got.includes('\r\n\r\n')) {
        socket.destroy();
        resolve(got);
      }
    });
  });
}

test('Expect: 100-continue with a declared body over the limit is refused (413) without a 100 Continue; within it, the caller is told to send', async () => {
  const refused = await expectContinue(BODY_LIMIT + 1);
  assert.match(refused, /^HTTP\/1\.1 413 /, 'the final answer comes first: the caller never sends the body');
  assert.ok(!refused.includes('100 Continue'));
  const accepted = await expectContinue(100);
  assert.match(accepted, /^HTTP\/1\.1 100 Continue\r\n/);
  assert.equal(mock.requests.length, 0);
});

test('a caller that stalls mid-body gets 408 once proxy.request_timeout_ms has passed, and the connection closes', async () => {
  const url = new URL(gw.proxyUrl);
  const started = Date.now();
  const { status, closed } = await new Promise<{ status: number; closed: boolean }>((resolve) => {
    const socket = net.connect(Number(url.port), url.hostname, () => {
      socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${CALLER_KEY}\r\nContent-Type: application/json\r\nX-Tollgate-Request-Id: e2e-stalled-body\r\nContent-Length: 1000\r\n\r\n{"model":`);
    });
    let head = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (head += d));
    socket.on('close', () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), closed: true }));
    socket.setTimeout(REQUEST_TIMEOUT_MS * 5, () => {
      socket.destroy();
      resolve({ status: 0, closed: false });
    });
  });
  assert.equal(closed, true, 'the gateway closed the connection');
  assert.equal(status, 408);
  assert.ok(Date.now() - started >= REQUEST_TIMEOUT_MS, 'not before the timeout');
  assert.equal(mock.requests.length, 0);
  // Recorded as what the caller got: the gateway's 408, not a caller that left (499).
  const [access] = await waitForLines(gw, 'access', (l) => l.request_id === 'e2e-stalled-body');
  assert.equal(access.status, 408);
  assert.equal(access.error_kind, 'request_timeout');
  // Once: the listener's own 408 answer does not log the request a second time.
  await new Promise((r) => setTimeout(r, 300));
  assert.deepEqual(logLines(gw, 'access').filter((l) => l.status === 408 && l.path === 'other'), []);
});

test('a body exactly at the limit is accepted', async () => {
  const res = await postChat(paddedBody(BODY_LIMIT));
  assert.equal(res.status, 200, await res.text());
  assert.equal(mock.requests.length, 1);
});

test('invalid JSON is 400 invalid_request_error, nothing upstream', async () => {
  const err = await errorBody(await postChat('{"model":"fast","messages":['), 400);
  assert.equal(err.type, 'invalid_request_error');
  assert.equal(err.code, null);
  assert.match(err.message, /JSON/);
  assert.equal(mock.requests.length, 0);
});

test('a JSON body that is not an object, or lacks model, is 400 naming the problem', async () => {
  const notObject = await errorBody(await postChat('[1,2]'), 400);
  assert.equal(notObject.type, 'invalid_request_error');
  const noModel = await errorBody(await postChat({ messages: hi }), 400);
  assert.equal(noModel.param, 'model');
  assert.equal(noModel.code, null);
  assert.equal(mock.requests.length, 0);
});

// ---- upstream status relay ----

test('an upstream 400 keeps its status and its own message, type, param and code (SDK BadRequestError)', async () => {
  const upstreamError = {
    message: "This model's maximum context length is 128000 tokens.",
    type: 'invalid_request_error',
    param: 'messages',
    code: 'context_length_exceeded',
  };
  mock.script({ status: 400, json: { error: upstreamError } });
  await assert.rejects(client.chat.completions.create({ model: 'fast', messages: hi }), (e: any) => {
    assert.ok(e instanceof OpenAI.BadRequestError, String(e));
    assert.equal(e.status, 400);
    assert.equal((e.error as any).message, upstreamError.message);
    assert.equal(e.type, 'invalid_request_error');
    assert.equal(e.param, 'messages');
    assert.equal(e.code, 'context_length_exceeded');
    return true;
  });
  assert.equal(mock.requests.length, 1);
});

test('an upstream error that echoes the provider key reaches the caller with the key masked, as JSON and in a stream', async () => {
  mock.setFallback((req) => ({ status: 401, json: { error: { message: `Incorrect API key provided: ${req.headers.authorization}`, type: 'invalid_request_error', code: 'invalid_api_key' } } }));
  const json = await errorBody(await postChat({ model: 'fast', messages: hi }), 401);
  assert.equal(json.message, 'Incorrect API key provided: Bearer [REDACTED]');
  mock.setFallback((req) => ({
    sse: [{ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { role: 'assistant' } }] }, { error: { message: `key ${req.headers.authorization} revoked`, type: 'invalid_request_error' } }],
    done: false,
  }));
  const stream = await postChat({ model: 'fast', messages: hi, stream: true });
  const text = await stream.text();
  assert.match(text, /key Bearer \[REDACTED\] revoked/);
  assert.ok(!text.includes(UPSTREAM_SECRET), text);
});

test('an upstream 404 with an empty body reads "upstream returned 404 Not Found"', async () => {
  mock.script({ status: 404 });
  await assert.rejects(client.chat.completions.create({ model: 'fast', messages: hi }), (e: any) => {
    assert.ok(e instanceof OpenAI.NotFoundError, String(e));
    assert.equal((e.error as any).message, 'upstream returned 404 Not Found');
    assert.equal(e.type, 'upstream_error');
    return true;
  });
});

test('an upstream 429 keeps its status and relays Retry-After', async () => {
  mock.script({
    status: 429,
    headers: { 'retry-after': '7' },
    json: { error: { message: 'Rate limit reached for requests', type: 'requests', param: null, code: 'rate_limit_exceeded' } },
  });
  const res = await postChat({ model: 'fast', messages: hi });
  const retryAfter = res.headers.get('retry-after');
  const err = await errorBody(res, 429);
  assert.equal(retryAfter, '7');
  assert.equal(err.message, 'Rate limit reached for requests');
  assert.equal(err.code, 'rate_limit_exceeded');
});

for (const [status, reason] of [[500, 'Internal Server Error'], [503, 'Service Unavailable']] as const) {
  test(`an upstream ${status} becomes 502 and its body is not shown`, async () => {
    const leak = `shard-7 stack trace ${status}`;
    mock.script({ status, json: { error: { message: leak, type: 'server_error', code: 'internal_detail' } } });
    const res = await postChat({ model: 'fast', messages: hi });
    const raw = await res.clone().text();
    const err = await errorBody(res, 502);
    assert.equal(err.message, `upstream returned ${status} ${reason}`);
    assert.equal(err.type, 'upstream_error');
    assert.ok(!raw.includes('shard-7'), raw);
    assert.ok(!raw.includes('internal_detail'), raw);
    // A plain-text 5xx body is suppressed the same way; the SDK sees an InternalServerError.
    mock.script({ status, body: leak, headers: { 'content-type': 'text/plain' } });
    await assert.rejects(client.chat.completions.create({ model: 'fast', messages: hi }), (e: any) => {
      assert.ok(e instanceof OpenAI.InternalServerError, String(e));
      assert.equal(e.status, 502);
      assert.equal((e.error as any).message, `upstream returned ${status} ${reason}`);
      assert.ok(!JSON.stringify(e.error).includes('shard-7'));
      return true;
    });
  });
}

// ---- upstream failures ----

test('an upstream slower than upstream.timeout_ms before its headers is 504', async () => {
  mock.script({ delayHeadersMs: TIMEOUT_MS * 4, json: {} });
  const t0 = performance.now();
  const res = await postChat({ model: 'fast', messages: hi });
  const elapsed = performance.now() - t0;
  const err = await errorBody(res, 504);
  assert.equal(err.type, 'timeout_error');
  assert.equal(err.code, 'upstream_timeout');
  assert.equal(err.message, `upstream request timed out after ${TIMEOUT_MS}ms`);
  assert.ok(elapsed >= TIMEOUT_MS - 50 && elapsed < TIMEOUT_MS * 3, `answered after ${elapsed} ms`);
});

test('an upstream body that stalls after the headers is 504 once upstream.timeout_ms has passed', async () => {
  mock.script({ chunks: ['{"id":"x","object":"chat.completion",', '"model":"gpt-4o-mini","choices":[]}'], chunkDelayMs: TIMEOUT_MS * 4 });
  const t0 = performance.now();
  const res = await postChat({ model: 'fast', messages: hi });
  const elapsed = performance.now() - t0;
  const err = await errorBody(res, 504);
  assert.equal(err.type, 'timeout_error');
  assert.equal(err.code, 'upstream_timeout');
  assert.ok(elapsed < TIMEOUT_MS * 3, `answered after ${elapsed} ms`);
});

test('upstream.timeout_ms bounds the whole non-streaming request, not only the wait for headers', async () => {
  // Headers after half the timeout, then a body whose last byte lands past the timeout in total
  // (but within a fresh timeout window counted from the headers).
  mock.script({
    delayHeadersMs: TIMEOUT_MS / 2,
    chunks: ['{"id":"x","object":"chat.completion",', '"model":"gpt-4o-mini",', '"choices":[]}'],
    chunkDelayMs: (TIMEOUT_MS * 5) / 12,
  });
  const res = await postChat({ model: 'fast', messages: hi });
  const err = await errorBody(res, 504);
  assert.equal(err.code, 'upstream_timeout');
});

// reference/ai-gateway.md §5.3 / §5.5 (spec 2 §7 leaves the types open): on /v1/messages the type
// follows the status — 400/422 invalid_request_error, 401, 403, 404, 408 timeout_error, 413, 429,
// 503 overloaded_error — and every other status is api_error: a 504 timeout, a 402, a 405, a 409.
test('/v1/messages: statuses outside the reference table are api_error (504 timeout, 402, 405, 409)', async () => {
  const postMessages = (init: RequestInit = {}) => fetch(`${gw.proxyUrl}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...auth },
    body: JSON.stringify({ model: 'fast', max_tokens: 8, messages: hi }),
    ...init,
  });
  const anthropicError = async (res: Response, status: number) => {
    const text = await res.text();
    assert.equal(res.status, status, text);
    const body = JSON.parse(text);
    assert.equal(body.type, 'error', text);
    return body.error as { type: string; message: string };
  };

  for (const status of [402, 409]) {
    mock.script({ status, json: { error: { message: `upstream said ${status}`, type: 'insufficient_quota', param: null, code: null } } });
    const relayed = await anthropicError(await postMessages(), status);
    assert.equal(relayed.type, 'api_error', `upstream ${status}`);
    assert.equal(relayed.message, `upstream said ${status}`);
  }

  const wrongMethod = await anthropicError(await postMessages({ method: 'GET', body: undefined }), 405);
  assert.equal(wrongMethod.type, 'api_error');

  mock.script({ status: 422, json: { error: { message: 'unprocessable', type: 'invalid_request_error', param: null, code: null } } });
  assert.equal((await anthropicError(await postMessages(), 422)).type, 'invalid_request_error');

  // Last: the timed-out exchange closes the kept-alive upstream connection, as the tests after this
  // one expect (a reset on a reused connection is resent once).
  mock.script({ delayHeadersMs: TIMEOUT_MS * 4, json: {} });
  const timedOut = await anthropicError(await postMessages(), 504);
  assert.equal(timedOut.type, 'api_error');
  assert.equal(timedOut.message, `upstream request timed out after ${TIMEOUT_MS}ms`);
});

test('an unreachable upstream (connection refused) is 502', async () => {
  const res = await postChat({ model: 'unreachable', messages: hi });
  const raw = await res.clone().text();
  const err = await errorBody(res, 502);
  assert.equal(err.type, 'upstream_error');
  assert.equal(err.code, 'upstream_transport');
  assert.ok(!raw.includes('sk-dead-secret'));
});

test('an upstream that resets the connection before answering is 502', async () => {
  mock.script({ destroyBeforeHeaders: true });
  const err = await errorBody(await postChat({ model: 'fast', messages: hi }), 502);
  assert.equal(err.code, 'upstream_transport');
});

test('an upstream 200 whose body is not JSON is 502', async () => {
  mock.script({ body: '<html><body>Bad gateway page</body></html>', headers: { 'content-type': 'text/html' } });
  const res = await postChat({ model: 'fast', messages: hi });
  const raw = await res.clone().text();
  const err = await errorBody(res, 502);
  assert.equal(err.type, 'upstream_error');
  assert.equal(err.code, 'upstream_decode');
  assert.ok(!raw.includes('Bad gateway page'));
});
