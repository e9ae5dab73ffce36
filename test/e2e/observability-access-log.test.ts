// E2E: the access-log switches (spec 2 §6.2): a config file without an observability block logs at
// info with the access log on; `observability.access_log: false` writes no access line while usage
// events and metrics go on.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startGateway, type Gateway } from '../harness/spawn.ts';
import { startMockUpstream, type MockUpstream } from '../harness/mock-upstream.ts';
import { replyFor } from '../harness/provider-wire.ts';
import { logLines, waitForLines } from '../harness/log-lines.ts';

const CALLER_KEY = 'sk-e2e-accesslog-caller-1c4f';

const resources = (mockUrl: string) => ({
  _format_version: '1',
  provider_keys: [{ display_name: 'up', provider: 'openai', api_key: 'sk-up-accesslog', api_base: `${mockUrl}/v1` }],
  models: [{ display_name: 'fast', provider: 'openai', model_name: 'gpt-up', provider_key: 'up' }],
  api_keys: [{ display_name: 'caller', key_env: 'E2E_ACCESSLOG_KEY', allowed_models: ['fast'] }],
});

let mock: MockUpstream;
before(async () => {
  mock = await startMockUpstream();
  mock.setFallback(replyFor({ text: 'ok' }));
});
after(() => mock?.close());

async function chat(gw: Gateway, id: string): Promise<void> {
  const res = await fetch(`${gw.proxyUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${CALLER_KEY}`, 'x-tollgate-request-id': id },
    body: JSON.stringify({ model: 'fast', messages: [{ role: 'user', content: 'hi' }] }),
  });
  await res.arrayBuffer();
  assert.equal(res.status, 200);
}

describe('a config without an observability block', () => {
  let gw: Gateway;
  before(async () => {
    gw = await startGateway({
      config: { proxy: { addr: '127.0.0.1:0' } },
      resources: resources(mock.url),
      // The metrics address comes from the environment so the file keeps no observability block.
      env: { E2E_ACCESSLOG_KEY: CALLER_KEY, TOLLGATE_OBSERVABILITY__METRICS__PROMETHEUS__ADDR: '127.0.0.1:0' },
    });
  });
  after(() => gw?.stop());

  test('logs at info: lifecycle lines and one access line per request', async () => {
    await chat(gw, 'e2e-accesslog-default');
    const [line] = await waitForLines(gw, 'access', (l) => l.request_id === 'e2e-accesslog-default');
    assert.equal(line.level, 'info');
    assert.ok(gw.stderrText().split('\n').some((l) => l.includes('"level":"info"') && l.includes('tollgate started')));
  });
});

describe('observability.access_log: false', () => {
  let gw: Gateway;
  before(async () => {
    gw = await startGateway({
      config: { proxy: { addr: '127.0.0.1:0' }, observability: { access_log: false, metrics: { prometheus: { addr: '127.0.0.1:0' } } } },
      resources: resources(mock.url),
      env: { E2E_ACCESSLOG_KEY: CALLER_KEY },
    });
  });
  after(() => gw?.stop());

  test('no access line is written; usage events and metrics go on', async () => {
    await chat(gw, 'e2e-accesslog-off');
    const notFound = await fetch(`${gw.proxyUrl}/nowhere`, { headers: { 'x-tollgate-request-id': 'e2e-accesslog-off-404' } });
    await notFound.arrayBuffer();
    const usage = await waitForLines(gw, 'usage', (l) => l.request_id === 'e2e-accesslog-off');
    assert.equal(usage.length, 1, 'the usage event is still written');
    // The usage line went through the same batched stream: an access line would be out by now.
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(logLines(gw, 'access'), []);
    const text = await (await fetch(`${gw.metricsUrl}/metrics`)).text();
    assert.match(text, /^tollgate_requests_total\{endpoint="\/v1\/chat\/completions",provider="openai",model="fast",status="200"\} 1$/m);
  });
});

describe('observability.log_level: warn', () => {
  let gw: Gateway;
  before(async () => {
    gw = await startGateway({
      config: { proxy: { addr: '127.0.0.1:0' }, observability: { log_level: 'warn', metrics: { prometheus: { addr: '127.0.0.1:0' } } } },
      resources: resources(mock.url),
      env: { E2E_ACCESSLOG_KEY: CALLER_KEY },
    });
  });
  after(() => gw?.stop());

  test('no info line is written (startup and access log included); usage events are data and still are', async () => {
    await chat(gw, 'e2e-loglevel-warn');
    const usage = await waitForLines(gw, 'usage', (l) => l.request_id === 'e2e-loglevel-warn');
    assert.equal(usage.length, 1);
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(logLines(gw, 'access'), []);
    const infoLines = gw.stderrText().split('\n').filter((l) => l.includes('"level":"info"') && !l.includes('"type":"usage"'));
    assert.deepEqual(infoLines, []);
  });
});

describe('requests the listener answers before a handler sees them', () => {
  let gw: Gateway;
  before(async () => {
    gw = await startGateway({
      config: { proxy: { addr: '127.0.0.1:0', request_timeout_ms: 600, real_ip: { trusted_proxies: ['127.0.0.1'] } }, observability: { metrics: { prometheus: { addr: '127.0.0.1:0' } } } },
      resources: resources(mock.url),
      env: { E2E_ACCESSLOG_KEY: CALLER_KEY },
    });
  });
  after(() => gw?.stop());

  /** Writes `bytes` on a fresh connection and reads until the gateway closes it. */
  function raw(bytes: string): Promise<string> {
    const { hostname, port } = new URL(gw.proxyUrl);
    return new Promise((resolve, reject) => {
      const socket = net.connect(Number(port), hostname, () => {
        if (bytes !== '') socket.write(bytes);
      });
      let got = '';
      socket.setEncoding('latin1');
      socket.on('data', (d: string) => (got += d));
      socket.on('error', reject);
      socket.on('close', () => resolve(got));
    });
  }

  const requestIdOf = (answer: string): string => /^x-tollgate-request-id: (\S+)\r$/im.exec(answer)?.[1] ?? '';

  test('a malformed request (400), a head over the size limit (431) and a stalled head (408) each get an answer, an access line and a metric', async () => {
    const malformed = await raw('GET /v1/models HTTP/1.1\r\nHost: x\r\nbad header\r\n\r\n');
    assert.match(malformed, /^HTTP\/1\.1 400 Bad Request\r\n/);
    const huge = await raw(`GET /v1/models HTTP/1.1\r\nHost: x\r\nauthorization: Bearer ${CALLER_KEY}\r\nx-pad: ${'a'.repeat(20_000)}\r\n\r\n`);
    assert.match(huge, /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
    const stalled = await raw(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nauthorization: Bearer ${CALLER_KEY}\r\n`);
    assert.match(stalled, /^HTTP\/1\.1 408 Request Timeout\r\n/);
    const expected: Array<[string, number, string, RegExp]> = [
      [requestIdOf(malformed), 400, 'invalid_request', /^malformed HTTP request \(HPE_/],
      [requestIdOf(huge), 431, 'request_too_large', /^request head exceeds the \d+-byte limit$/],
      [requestIdOf(stalled), 408, 'request_timeout', /^request head not received within 600 ms$/],
    ];
    for (const [id, status, kind, message] of expected) {
      assert.notEqual(id, '', `the ${status} answer carries a request id`);
      const [line] = await waitForLines(gw, 'access', (l) => l.request_id === id);
      assert.equal(line.status, status);
      assert.equal(line.error_kind, kind);
      assert.match(String(line.error), message);
      assert.equal(line.client_ip, '127.0.0.1');
      assert.equal(line.path, 'other');
      assert.equal(line.method, undefined);
      assert.equal(typeof line.latency_ms, 'number');
    }
    assert.ok(!gw.stderrText().includes(CALLER_KEY), 'a presented credential is never logged');
    const text = await (await fetch(`${gw.metricsUrl}/metrics`)).text();
    for (const status of [400, 408, 431]) {
      assert.match(text, new RegExp(`^tollgate_requests_total\\{endpoint="other",provider="unknown",model="unknown",status="${status}"\\} 1$`, 'm'));
    }
  });

  test('CONNECT (the gateway taken for a forward proxy) is a 405 with Allow, an access line and a metric, not a dropped connection', async () => {
    const answer = await raw('CONNECT api.openai.com:443 HTTP/1.1\r\nHost: api.openai.com:443\r\n\r\n');
    assert.match(answer, /^HTTP\/1\.1 405 Method Not Allowed\r\n/);
    assert.match(answer, /\r\nAllow: GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS\r\n/);
    assert.match(answer, /\r\nContent-Length: 0\r\n/);
    const [line] = await waitForLines(gw, 'access', (l) => l.request_id === requestIdOf(answer));
    assert.deepEqual([line.method, line.path, line.status, line.error_kind], ['CONNECT', 'other', 405, 'method_not_allowed']);
    assert.equal(line.error, 'method CONNECT is not allowed: the gateway is not a forward proxy (api.openai.com:443)');
    const text = await (await fetch(`${gw.metricsUrl}/metrics`)).text();
    assert.match(text, /^tollgate_requests_total\{endpoint="other",provider="unknown",model="unknown",status="405"\} 1$/m);
    // Its head was read: the caller's request id and, from a trusted proxy, its client address count.
    const named = await raw('CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\nx-tollgate-request-id: e2e-connect-7\r\nx-forwarded-for: 203.0.113.9\r\n\r\n');
    assert.equal(requestIdOf(named), 'e2e-connect-7');
    const [namedLine] = await waitForLines(gw, 'access', (l) => l.request_id === 'e2e-connect-7');
    assert.equal(namedLine.client_ip, '203.0.113.9');
  });

  test('a connection that sends nothing, or nothing after its last response, is closed without an access line', async () => {
    const before = logLines(gw, 'access').length;
    const idle = await raw('');
    assert.match(idle, /^HTTP\/1\.1 408 /, 'Node answers an idle connection at the head timeout');
    await chat(gw, 'e2e-accesslog-before-idle');
    await waitForLines(gw, 'access', (l) => l.request_id === 'e2e-accesslog-before-idle');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(logLines(gw, 'access').length, before + 1, 'only the chat request has a line');
  });
});

describe('a log reader that stops reading', () => {
  let gw: Gateway;
  before(async () => {
    gw = await startGateway({
      config: { proxy: { addr: '127.0.0.1:0' }, observability: { metrics: { prometheus: { addr: '127.0.0.1:0' } } } },
      resources: resources(mock.url),
      env: { E2E_ACCESSLOG_KEY: CALLER_KEY },
    });
  });
  after(() => gw?.stop());

  test('does not hold up requests, and gets every line, in order, once it reads again', { timeout: 60_000 }, async () => {
    // stderr is a socket pair here, as a log shipper's pipe would be: the gateway writes it from
    // its event loop, so a full pipe must leave lines queued, not block the loop.
    gw.proc.stderr!.pause();
    const ids = Array.from({ length: 600 }, (_, i) => `e2e-stuck-reader-${String(i).padStart(3, '0')}`);
    const slowest = { ms: 0 };
    for (let i = 0; i < ids.length; i += 8) {
      await Promise.all(
        ids.slice(i, i + 8).map(async (id) => {
          const started = Date.now();
          await chat(gw, id);
          slowest.ms = Math.max(slowest.ms, Date.now() - started);
        }),
      );
    }
    // ~1.2 MB of access and usage lines: far more than the socket buffers hold.
    const seen = logLines(gw, 'access').filter((l) => String(l.request_id).startsWith('e2e-stuck-reader-')).length;
    assert.ok(seen < ids.length, `the reader was stalled (${seen} of ${ids.length} lines read while paused)`);
    assert.ok(slowest.ms < 2000, `no request waited for the reader (slowest ${slowest.ms} ms)`);
    gw.proc.stderr!.resume();
    const lines = await waitForLines(gw, 'access', (l) => String(l.request_id).startsWith('e2e-stuck-reader-'), ids.length, 10_000);
    const got = lines.map((l) => String(l.request_id));
    assert.deepEqual([...got].sort(), ids, 'every line, once');
    // The eight requests of a round run at once; the rounds one after another, so their lines follow in order.
    const rounds = got.map((id) => Math.floor(Number(id.slice(-3)) / 8));
    assert.ok(rounds.every((r, i) => i === 0 || r >= rounds[i - 1]), 'lines in the order their requests finished');
    const usage = logLines(gw, 'usage').filter((l) => String(l.request_id).startsWith('e2e-stuck-reader-'));
    assert.equal(usage.length, ids.length);
  });
});
