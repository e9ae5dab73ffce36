// E2E: usage events (spec 2 §6.1) for each endpoint (chat, messages) and outcome — success
// (buffered and streamed), upstream 4xx, upstream 5xx, client abort 499, timeouts 504 (buffered
// and mid-stream), mid-stream break 502, in-stream 429 — plus gateway refusals, whose rows carry
// the access log's text. Each row is read from the gateway's stderr ("type":"usage") and from the
// NDJSON file sink, and checked against the request's access-log line (one vocabulary for
// error_kind and error_class).
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startGateway, type Gateway } from '../harness/spawn.ts';
import { startMockUpstream, type MockUpstream, type Reply } from '../harness/mock-upstream.ts';
import { anthropicFrames, errorReplyFor, openAIFrames, replyFor, type Turn } from '../harness/provider-wire.ts';
import { waitForLines } from '../harness/log-lines.ts';

const CALLER_KEY = 'sk-e2e-usage-caller-51c0aa';
const UPSTREAM_SECRET = 'sk-e2e-usage-upstream-8e21bb';
const TURN: Turn = { text: 'hello there', usage: { input: 12, output: 4 } };

/** Every field an emitted usage event carries. */
const FIELDS = [
  'type', 'occurred_at', 'request_id', 'operation', 'requested_model', 'model_id', 'provider', 'provider_key_id', 'api_key_id',
  'status', 'status_code', 'error_class', 'error_message', 'attempt_kind', 'billable', 'stream',
  'prompt_tokens', 'completion_tokens', 'total_tokens', 'cached_tokens', 'cache_creation_tokens', 'reasoning_tokens',
  'latency_ms', 'ttft_ms', 'passthrough_route_name', 'client_identity', 'upstream_model',
  'downstream_latency_ms', 'downstream_ttft_ms', 'upstream_latency_ms', 'upstream_ttft_ms',
  'applied_guardrails', 'guardrail_blocked', 'guardrail_blocked_fail_closed', 'guardrail_bypassed_reason',
  'guardrail_enforced_hits', 'guardrail_monitor_hits', 'request_headers', 'gateway_embedding_calls',
];
const LOG_ENVELOPE = ['level', 'time', 'service', 'msg'];

let mock: MockUpstream;
let gw: Gateway;
let dir: string;
let usageFile: string;

before(async () => {
  mock = await startMockUpstream();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-usage-e2e-'));
  usageFile = path.join(dir, 'usage.ndjson');
  gw = await startGateway({
    config: {
      proxy: { addr: '127.0.0.1:0', request_body_limit_bytes: 4096 },
      observability: { metrics: { prometheus: { addr: '127.0.0.1:0' } }, usage_event: { request_headers: ['X-Team'], file: usageFile } },
      upstream: { timeout_ms: 1000, retries: 0 },
    },
    resources: {
      _format_version: '1',
      provider_keys: [
        { display_name: 'oa-key', provider: 'openai', api_key: UPSTREAM_SECRET, api_base: `${mock.url}/v1` },
        { display_name: 'an-key', provider: 'anthropic', api_key: UPSTREAM_SECRET, api_base: mock.url },
      ],
      models: [
        { display_name: 'oa', provider: 'openai', model_name: 'oa-up', provider_key: 'oa-key' },
        { display_name: 'an', provider: 'anthropic', model_name: 'an-up', provider_key: 'an-key' },
        { display_name: 'secret-model', provider: 'openai', model_name: 'x', provider_key: 'oa-key' },
      ],
      api_keys: [{ display_name: 'caller', key_env: 'E2E_USAGE_KEY', allowed_models: ['oa', 'an', 'gh*'] }],
    },
    env: { E2E_USAGE_KEY: CALLER_KEY },
  });
});
after(async () => {
  await gw?.stop();
  await mock?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => mock.reset());

type Endpoint = 'chat' | 'messages';
const ROUTES = { chat: { path: '/v1/chat/completions', model: 'oa' }, messages: { path: '/v1/messages', model: 'an' } } as const;

function body(endpoint: Endpoint, stream: boolean, model: string = ROUTES[endpoint].model): object {
  return endpoint === 'chat'
    ? { model, messages: [{ role: 'user', content: 'hi' }], stream }
    : { model, max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], stream };
}

let seq = 0;
/** Send one request with a fresh request id; read the whole answer (or abort after the first chunk). */
async function send(endpoint: Endpoint, opts: { stream?: boolean; model?: string; abortAfterFirstChunk?: boolean; headers?: Record<string, string>; raw?: string } = {}): Promise<{ id: string; status: number; text: string; bytes: number }> {
  const id = `e2e-usage-${endpoint}-${++seq}`;
  const ac = new AbortController();
  const res = await fetch(gw.proxyUrl + ROUTES[endpoint].path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${CALLER_KEY}`, 'x-tollgate-request-id': id, 'x-team': 'blue', ...opts.headers },
    body: opts.raw ?? JSON.stringify(body(endpoint, opts.stream ?? false, opts.model)),
    signal: ac.signal,
  });
  if (opts.abortAfterFirstChunk) {
    const reader = res.body!.getReader();
    await reader.read();
    ac.abort();
    await reader.cancel().catch(() => undefined);
    return { id, status: res.status, text: '', bytes: 0 };
  }
  const buf = Buffer.from(await res.arrayBuffer());
  return { id, status: res.status, text: buf.toString('utf8'), bytes: buf.length };
}

interface Observed {
  usage: any;
  access: any;
  fileRow: any;
}

function fileRows(): any[] {
  if (!fs.existsSync(usageFile)) return [];
  return fs.readFileSync(usageFile, 'utf8').split('\n').filter((l) => l.startsWith('{') && l.endsWith('}')).map((l) => JSON.parse(l));
}

/** The one terminal usage row of a request, its access line and its NDJSON row; checks they agree. */
async function observe(id: string): Promise<Observed> {
  const rows = await waitForLines(gw, 'usage', (l) => l.request_id === id);
  const [access] = await waitForLines(gw, 'access', (l) => l.request_id === id);
  assert.equal(rows.length, 1, `${id}: one usage row`);
  assert.ok(access, `${id}: access line`);
  const usage = rows[0];
  assert.deepEqual(Object.keys(usage).filter((k) => !LOG_ENVELOPE.includes(k)).sort(), [...FIELDS].sort(), `${id}: field list`);
  assert.match(usage.occurred_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  // One vocabulary: the usage row and the access line tell the same story.
  assert.equal(usage.status, access.status, `${id}: status`);
  assert.equal(usage.status_code, usage.status);
  assert.equal(usage.error_class, access.error_kind ?? null, `${id}: error_class = error_kind`);
  assert.equal(usage.error_message, access.error ?? null, `${id}: error_message = access-log text`);
  assert.ok(Math.abs(usage.latency_ms - access.latency_ms) <= 0.001, `${id}: one latency (usage ${usage.latency_ms}, access ${access.latency_ms})`);
  let fileRow: any;
  const deadline = Date.now() + 3000;
  while ((fileRow = fileRows().find((r) => r.request_id === id)) === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
  assert.ok(fileRow, `${id}: NDJSON row`);
  const { level: _l, time: _t, service: _s, msg: _m, ...logged } = usage;
  assert.deepEqual(fileRow, logged, `${id}: the file row is the stderr row`);
  return { usage, access, fileRow };
}

function streamReply(endpoint: Endpoint, extra: Partial<Reply> = {}): Reply {
  return endpoint === 'chat' ? { sse: openAIFrames(TURN, 'oa-up'), ...extra } : { sse: anthropicFrames(TURN, 'an-up'), done: false, ...extra };
}

for (const endpoint of ['chat', 'messages'] as const) {
  describe(`usage events on ${endpoint}`, () => {
    const operation = endpoint;

    test('success: one billable 200 row with tokens as reported, attribution, latencies and captured headers', async () => {
      mock.setFallback(replyFor(TURN));
      const r = await send(endpoint);
      assert.equal(r.status, 200);
      const { usage, access } = await observe(r.id);
      assert.equal(usage.operation, operation);
      assert.equal(usage.requested_model, ROUTES[endpoint].model);
      assert.ok(usage.model_id.length > 0);
      assert.equal(usage.provider, endpoint === 'chat' ? 'openai' : 'anthropic');
      assert.equal(usage.upstream_model, endpoint === 'chat' ? 'oa-up' : 'an-up');
      assert.ok(usage.provider_key_id.length > 0, 'provider_key_id');
      assert.equal(usage.provider_key_id, access.provider_key_id);
      assert.equal(usage.api_key_id, access.api_key_id);
      assert.equal(usage.attempt_kind, 'initial');
      assert.equal(usage.billable, true);
      assert.equal(usage.stream, false);
      assert.equal(usage.prompt_tokens, 12);
      assert.equal(usage.completion_tokens, 4);
      assert.equal(usage.error_class, null);
      assert.equal(typeof usage.upstream_latency_ms, 'number');
      assert.ok(usage.upstream_latency_ms <= usage.latency_ms);
      assert.equal(usage.downstream_latency_ms, usage.latency_ms);
      assert.deepEqual(usage.request_headers, { 'x-team': 'blue' }, 'configured header captured, credentials never');
      assert.deepEqual(usage.applied_guardrails, []);
      assert.equal(usage.guardrail_blocked, false);
      assert.deepEqual(usage.gateway_embedding_calls, { calls: [], dropped: 0 });
    });

    test('streamed success: 200 at stream end, with upstream and downstream TTFT', async () => {
      mock.setFallback(() => streamReply(endpoint));
      const r = await send(endpoint, { stream: true });
      assert.equal(r.status, 200);
      const { usage, access } = await observe(r.id);
      assert.equal(usage.stream, true);
      assert.equal(usage.prompt_tokens, 12);
      assert.equal(usage.completion_tokens, 4);
      assert.equal(typeof usage.upstream_ttft_ms, 'number');
      assert.equal(typeof usage.downstream_ttft_ms, 'number');
      assert.ok(usage.downstream_ttft_ms <= usage.latency_ms);
      assert.equal(access.response_body_bytes, r.bytes, 'the access line counts the bytes the caller got');
    });

    test('upstream 4xx keeps its status; the row is not billable', async () => {
      mock.setFallback(errorReplyFor(400, 'invalid_request_error', 'bad things'));
      const r = await send(endpoint);
      assert.equal(r.status, 400);
      const { usage } = await observe(r.id);
      assert.equal(usage.billable, false);
      assert.equal(usage.prompt_tokens, null);
      assert.ok(usage.error_class !== null);
    });

    test('upstream 5xx: 502, upstream_status, with the upstream\'s timings (it was called)', async () => {
      mock.setFallback((req) => ({ ...errorReplyFor(503, 'overloaded_error', 'busy')(req), delayHeadersMs: 150 }));
      const r = await send(endpoint);
      assert.equal(r.status, 502);
      const { usage, access } = await observe(r.id);
      assert.equal(usage.error_class, 'upstream_status');
      assert.ok(usage.upstream_ttft_ms >= 140, `upstream_ttft_ms ${usage.upstream_ttft_ms}`);
      assert.ok(usage.upstream_latency_ms >= usage.upstream_ttft_ms);
      assert.equal(typeof access.upstream_latency_ms, 'number');
    });

    test('a JSON answer\'s first upstream byte is its head, not the end of its body', async () => {
      mock.setFallback((req) => {
        const text = JSON.stringify((replyFor(TURN)(req) as { json: unknown }).json);
        return { chunks: [text.slice(0, 10), text.slice(10)], chunkDelayMs: 300 };
      });
      const r = await send(endpoint);
      assert.equal(r.status, 200);
      const { usage } = await observe(r.id);
      assert.ok(usage.upstream_latency_ms >= 290, `upstream_latency_ms ${usage.upstream_latency_ms}`);
      assert.ok(usage.upstream_ttft_ms < usage.upstream_latency_ms - 200, `upstream_ttft_ms ${usage.upstream_ttft_ms}`);
      assert.ok(usage.ttft_ms < usage.latency_ms - 200, `ttft_ms ${usage.ttft_ms}`);
    });

    test('client abort mid-stream: 499, client_disconnected', async () => {
      mock.setFallback(() => streamReply(endpoint, { delayBetweenEventsMs: 200 }));
      const r = await send(endpoint, { stream: true, abortAfterFirstChunk: true });
      assert.equal(r.status, 200);
      const { usage } = await observe(r.id);
      assert.equal(usage.status, 499);
      assert.equal(usage.error_class, 'client_disconnected');
      assert.equal(usage.billable, false);
    });

    test('read timeout mid-stream: 504 recorded at stream end', async () => {
      mock.setFallback(() => streamReply(endpoint, { delayBetweenEventsMs: 1600 }));
      const r = await send(endpoint, { stream: true });
      assert.equal(r.status, 200, 'the head went out with the first event');
      const { usage } = await observe(r.id);
      assert.equal(usage.status, 504);
      assert.equal(usage.error_class, 'timeout');
    });

    test('buffered timeout: 504', async () => {
      mock.setFallback((req) => ({ ...replyFor(TURN)(req), delayHeadersMs: 1600 }));
      const r = await send(endpoint);
      assert.equal(r.status, 504);
      const { usage } = await observe(r.id);
      assert.equal(usage.error_class, 'timeout');
    });

    test('upstream break mid-stream: 502, transport', async () => {
      mock.setFallback(() => streamReply(endpoint, { disconnectAfterEvents: 2 }));
      const r = await send(endpoint, { stream: true });
      assert.equal(r.status, 200);
      const { usage } = await observe(r.id);
      assert.equal(usage.status, 502);
      assert.equal(usage.error_class, 'transport');
    });

    test('an upstream stream that ends cleanly before it finished: 502, upstream_decode, recorded at stream end', async () => {
      const cut = endpoint === 'chat' ? openAIFrames(TURN, 'oa-up').slice(0, 1) : anthropicFrames(TURN, 'an-up').slice(0, 1);
      mock.setFallback(() => ({ sse: cut, done: false }));
      const r = await send(endpoint, { stream: true });
      assert.equal(r.status, 200);
      const { usage } = await observe(r.id);
      assert.equal(usage.status, 502);
      assert.equal(usage.error_class, 'upstream_decode');
      assert.equal(usage.billable, false);
    });

    test('an upstream usage report with unusable counts is recorded as none, and the gateway keeps serving', async () => {
      const bad: Turn = { text: 'odd usage', usage: { input: 'a' as unknown as number, output: -1 } };
      for (const stream of [false, true]) {
        mock.setFallback(replyFor(bad));
        const r = await send(endpoint, { stream });
        assert.equal(r.status, 200);
        const { usage } = await observe(r.id);
        // Anthropic reports count a missing part as 0; an OpenAI report without counts has none.
        const none = endpoint === 'chat' ? null : 0;
        assert.equal(usage.prompt_tokens, none, `stream ${stream}`);
        assert.equal(usage.completion_tokens, none, `stream ${stream}`);
      }
      mock.setFallback(replyFor(TURN));
      assert.equal((await send(endpoint)).status, 200, 'the gateway still serves');
      assert.equal((await fetch(`${gw.metricsUrl}/metrics`)).status, 200);
    });

    test('in-stream rate-limit error keeps its 4xx: 429, upstream_in_band', async () => {
      const error = endpoint === 'chat'
        ? { sse: [openAIFrames(TURN, 'oa-up')[0], { error: { message: 'slow down', type: 'rate_limit_error', code: 'rate_limit_exceeded' } }], done: false }
        : { sse: [anthropicFrames(TURN, 'an-up')[0], 'event: error\ndata: {"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}\n\n'], done: false };
      mock.setFallback(() => error);
      const r = await send(endpoint, { stream: true });
      assert.equal(r.status, 200);
      const { usage } = await observe(r.id);
      assert.equal(usage.status, 429);
      assert.equal(usage.error_class, 'upstream_in_band');
    });

    test('a caller that leaves after the in-stream error frame (as the SDKs do): the error\'s status, not billable', async () => {
      const rest = endpoint === 'chat' ? openAIFrames(TURN, 'oa-up').slice(1) : anthropicFrames(TURN, 'an-up').slice(1);
      const error = endpoint === 'chat'
        ? { message: 'slow down', type: 'rate_limit_error', code: 'rate_limit_exceeded' }
        : 'event: error\ndata: {"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}\n\n';
      const first = endpoint === 'chat' ? openAIFrames(TURN, 'oa-up')[0] : anthropicFrames(TURN, 'an-up')[0];
      // The upstream keeps the stream open after its error event.
      mock.setFallback(() => ({ sse: [first, endpoint === 'chat' ? { error } : error, ...rest], done: false, delayBetweenEventsMs: 250 }));
      const id = `e2e-usage-${endpoint}-${++seq}`;
      const ac = new AbortController();
      const res = await fetch(gw.proxyUrl + ROUTES[endpoint].path, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${CALLER_KEY}`, 'x-tollgate-request-id': id },
        body: JSON.stringify(body(endpoint, true)),
        signal: ac.signal,
      });
      const reader = res.body!.getReader();
      let text = '';
      while (!text.includes('slow down')) {
        const { done, value } = await reader.read();
        assert.equal(done, false, 'the error frame arrives before the end');
        text += Buffer.from(value!).toString('utf8');
      }
      ac.abort();
      await reader.cancel().catch(() => undefined);
      const { usage } = await observe(id);
      assert.equal(usage.status, 429);
      assert.equal(usage.error_class, 'upstream_in_band');
      assert.equal(usage.billable, false);
    });

    test('an in-stream server error is 502', async () => {
      const error = endpoint === 'chat'
        ? { sse: [openAIFrames(TURN, 'oa-up')[0], { error: { message: 'boom', type: 'server_error' } }], done: false }
        : { sse: [anthropicFrames(TURN, 'an-up')[0], 'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"boom"}}\n\n'], done: false };
      mock.setFallback(() => error);
      const r = await send(endpoint, { stream: true });
      const { usage } = await observe(r.id);
      assert.equal(usage.status, 502);
      assert.equal(usage.error_class, 'upstream_in_band');
    });

    test('gateway refusals leave rows whose error_message is the access-log text', async () => {
      const cases: Array<[string, () => Promise<{ id: string; status: number }>, number]> = [
        ['missing key', () => send(endpoint, { headers: { authorization: '' } }), 401],
        ['wrong key', () => send(endpoint, { headers: { authorization: 'Bearer sk-not-a-key-7a7a' } }), 401],
        ['not allowed', () => send(endpoint, { model: 'secret-model' }), 403],
        ['no such model', () => send(endpoint, { model: 'ghost' }), 404],
        ['too large', () => send(endpoint, { raw: JSON.stringify({ ...body(endpoint, false), pad: 'x'.repeat(5000) }) }), 413],
      ];
      for (const [what, go, status] of cases) {
        const r = await go();
        assert.equal(r.status, status, what);
        const { usage, access } = await observe(r.id);
        assert.equal(usage.operation, operation, what);
        assert.ok(typeof usage.error_message === 'string' && usage.error_message.length > 0, `${what}: error_message`);
        assert.equal(usage.error_message, access.error, what);
        assert.equal(usage.billable, false, what);
      }
      assert.equal(mock.requests.length, 0, 'refusals never reach the upstream');
    });

    test('a malformed body that names its model keeps it as requested_model; no usable model leaves ""', async () => {
      const model = ROUTES[endpoint].model;
      const cases: Array<[string, string, string]> = [
        ['messages not a list', JSON.stringify({ ...body(endpoint, false), messages: 'hi' }), model],
        ['bad role', JSON.stringify({ ...body(endpoint, false), messages: [{ role: 'robot', content: 'hi' }] }), model],
        ['model too long', JSON.stringify(body(endpoint, false, 'm'.repeat(513))), ''],
        ['not JSON', `{"model":"${model}",`, ''],
      ];
      for (const [what, raw, expected] of cases) {
        const r = await send(endpoint, { raw });
        assert.equal(r.status, 400, what);
        const { usage } = await observe(r.id);
        assert.equal(usage.requested_model, expected, what);
        assert.equal(usage.model_id, '', what);
      }
    });
  });
}

/** The gateway closed the upstream request (within a second) instead of reading it to its end. */
async function assertUpstreamClosed(): Promise<void> {
  const until = Date.now() + 1000;
  while (mock.aborted === 0 && Date.now() < until) await new Promise((res) => setTimeout(res, 20));
  assert.equal(mock.aborted, 1, 'the upstream request was closed, not read to its end');
}

for (const [endpoint, model] of [['chat', 'an'], ['messages', 'oa']] as const) {
  test(`a translated stream (${endpoint} to ${model}) with a frame that is not JSON ends at once: 502, upstream_decode`, async () => {
    const frames = model === 'oa' ? openAIFrames(TURN, 'oa-up') : anthropicFrames(TURN, 'an-up');
    // After the bad frame the upstream would keep the stream open for another ~1.5 s.
    mock.setFallback(() => ({ sse: [frames[0], 'data: {"broken json\n\n', ...frames.slice(1)], done: model === 'oa', delayBetweenEventsMs: 250 }));
    const r = await send(endpoint, { stream: true, model });
    assert.equal(r.status, 200, 'the head went out with the first event');
    assert.match(r.text, /upstream_decode|api_error/, 'an error frame ends the stream');
    await assertUpstreamClosed();
    const { usage } = await observe(r.id);
    assert.equal(usage.status, 502);
    assert.equal(usage.error_class, 'upstream_decode');
    assert.equal(usage.billable, false);
  });
}

test('a translated stream (chat to an) ends with the upstream\'s in-band error instead of waiting for the upstream to close', async () => {
  const frames = anthropicFrames(TURN, 'an-up');
  const error = 'event: error\ndata: {"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}\n\n';
  // After its error event the upstream would keep the stream open for another ~1.5 s.
  mock.setFallback(() => ({ sse: [frames[0], error, ...frames.slice(1)], done: false, delayBetweenEventsMs: 250 }));
  const r = await send('chat', { stream: true, model: 'an' });
  assert.equal(r.text.match(/slow down/g)?.length, 1, r.text);
  await assertUpstreamClosed();
  const { usage } = await observe(r.id);
  assert.equal(usage.status, 429);
  assert.equal(usage.error_class, 'upstream_in_band');
});

test('a wrong method is access-logged (405 with Allow) and leaves no usage row: nothing was served', async () => {
  const id = `e2e-usage-405-${++seq}`;
  const res = await fetch(`${gw.proxyUrl}/v1/chat/completions`, { headers: { 'x-tollgate-request-id': id } });
  await res.arrayBuffer();
  assert.equal(res.status, 405);
  assert.equal(res.headers.get('allow'), 'POST');
  const [access] = await waitForLines(gw, 'access', (l) => l.request_id === id);
  assert.equal(access.status, 405);
  assert.equal(access.error_kind, 'method_not_allowed');
  assert.deepEqual(await waitForLines(gw, 'usage', (l) => l.request_id === id, 1, 300), []);
});

test('no credential ever reaches stderr or the usage file', async () => {
  mock.setFallback(replyFor(TURN));
  const r = await send('chat', { headers: { 'x-api-key': CALLER_KEY } });
  await observe(r.id);
  const all = gw.stderrText() + fs.readFileSync(usageFile, 'utf8');
  for (const secret of [CALLER_KEY, UPSTREAM_SECRET, 'sk-not-a-key-7a7a']) assert.ok(!all.includes(secret), `found ${secret}`);
});

describe('observability.usage_event.log: false', () => {
  let quiet: Gateway;
  let quietFile: string;
  before(async () => {
    quietFile = path.join(dir, 'quiet-usage.ndjson');
    quiet = await startGateway({
      config: {
        proxy: { addr: '127.0.0.1:0' },
        observability: { metrics: { prometheus: { addr: '127.0.0.1:0' } }, usage_event: { log: false, file: quietFile } },
        upstream: { retries: 0 },
      },
      resources: {
        _format_version: '1',
        provider_keys: [{ display_name: 'oa-key', provider: 'openai', api_key: UPSTREAM_SECRET, api_base: `${mock.url}/v1` }],
        models: [{ display_name: 'oa', provider: 'openai', model_name: 'oa-up', provider_key: 'oa-key' }],
        api_keys: [{ display_name: 'caller', key_env: 'E2E_USAGE_KEY', allowed_models: ['oa'] }],
      },
      env: { E2E_USAGE_KEY: CALLER_KEY },
    });
  });
  after(async () => {
    await quiet?.stop();
  });

  test('keeps usage events off stderr while the file sink and the counter still get them', async () => {
    mock.setFallback(replyFor(TURN));
    const res = await fetch(`${quiet.proxyUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CALLER_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(body('chat', false)),
    });
    assert.equal(res.status, 200);
    const id = res.headers.get('x-tollgate-request-id');
    await res.text();
    const [access] = await waitForLines(quiet, 'access', (l) => l.request_id === id);
    assert.equal(access.status, 200, 'the access log still runs');
    let rows: any[] = [];
    for (let i = 0; i < 40 && rows.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
      rows = fs.existsSync(quietFile) ? fs.readFileSync(quietFile, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((r) => r.request_id === id) : [];
    }
    assert.equal(rows.length, 1, 'the NDJSON file got the event');
    assert.equal(rows[0].prompt_tokens, 12);
    assert.deepEqual(await waitForLines(quiet, 'usage', (l) => l.request_id === id, 1, 300), [], 'no usage line on stderr');
    const metrics = await (await fetch(`${quiet.metricsUrl}/metrics`)).text();
    assert.match(metrics, /tollgate_usage_events_emitted_total\{operation="chat",status_class="2xx"\} 1/);
  });
});
