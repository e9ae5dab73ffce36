// E2E: proxy.send_timeout_ms (docs/configuration.md). A caller that stops reading a streamed
// answer while the upstream keeps sending is cut once it has read nothing for that long: the
// upstream request is closed and the request is recorded 499, on the model path and on a
// pass-through route alike. A caller that reads slowly but steadily is not cut. A complete
// answer of several MB (a JSON completion, a buffered pass-through body) to a caller that never
// reads is cut the same way instead of being held until the caller closes the connection.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import type { Gateway } from '../harness/spawn.ts';
import { useProxyFixture } from '../harness/proxy-fixture.ts';
import { chatChunks, chatCompletion, type MockUpstream } from '../harness/mock-upstream.ts';
import { usageOf } from '../harness/echo-upstream.ts';
import { waitForLines } from '../harness/log-lines.ts';

const KEY = 'sk-e2e-send-timeout-caller';
const SEND_TIMEOUT_MS = 1000;

let mock: MockUpstream;
let gw: Gateway;

useProxyFixture({
  config: { proxy: { send_timeout_ms: SEND_TIMEOUT_MS }, upstream: { timeout_ms: 10_000, retries: 0 } },
  resources: (mockUrl) => ({
    _format_version: '1',
    provider_keys: [{ display_name: 'up', provider: 'openai', api_key: 'sk-upstream-secret', api_base: `${mockUrl}/v1` }],
    models: [{ display_name: 'fast', provider: 'openai', model_name: 'gpt-4o-mini', provider_key: 'up' }],
    api_keys: [{ display_name: 'caller', key_env: 'E2E_SEND_TIMEOUT_KEY', allowed_models: ['*'], allowed_routes: ['*'] }],
    passthrough_routes: [{ name: 'r', path_prefix: '/passthrough/r', target_url: mockUrl, provider_key: 'up' }],
  }),
  env: { E2E_SEND_TIMEOUT_KEY: KEY },
  ready: (fx) => ({ mock, gw } = fx),
});

/** About `mib` MiB of stream events: more than the socket buffers between mock, gateway and caller hold. */
function bigStream(mib: number): object[] {
  const text = 'x'.repeat(4096);
  return chatChunks({ parts: Array.from({ length: mib * 256 }, () => text) });
}

interface RawCaller {
  socket: net.Socket;
  /** Bytes received so far. */
  received(): number;
  /** Everything received (head and body) once the connection closed. */
  closed: Promise<string>;
  head: Promise<string>;
}

/** A streaming chat request on a raw socket (connection: close, so the socket closes with the response). */
function rawStream(path: string): RawCaller {
  const body = JSON.stringify({ model: 'fast', stream: true, messages: [{ role: 'user', content: 'hi' }] });
  const url = new URL(gw.proxyUrl);
  const socket = net.connect(Number(url.port), url.hostname);
  socket.write(
    `POST ${path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${KEY}\r\ncontent-type: application/json\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
  const chunks: Buffer[] = [];
  let size = 0;
  let onHead: (h: string) => void = () => {};
  const head = new Promise<string>((resolve) => (onHead = resolve));
  let headSeen = false;
  socket.on('data', (c: Buffer) => {
    chunks.push(c);
    size += c.length;
    // Look for the head only until it is found: joining every chunk on every read would make a
    // 16 MiB stream quadratic, and a reader that busy stalls long enough to be cut.
    if (headSeen) return;
    const text = Buffer.concat(chunks).toString('latin1');
    const end = text.indexOf('\r\n\r\n');
    if (end >= 0) {
      headSeen = true;
      onHead(text.slice(0, end));
    }
  });
  const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(Buffer.concat(chunks).toString('utf8'))));
  socket.on('error', () => {});
  return { socket, received: () => size, closed, head };
}

function requestIdOf(head: string): string {
  const m = /x-tollgate-request-id: *([^\r\n]+)/i.exec(head);
  assert.ok(m, head);
  return m[1];
}

async function waitFor(what: string, cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

for (const [name, path] of [
  ['a model stream', '/v1/chat/completions'],
  ['a pass-through event stream', '/passthrough/r/v1/chat/completions'],
] as const) {
  test(`${name}: a caller that stops reading is cut after send_timeout_ms, the upstream request closed, recorded 499`, { timeout: 30_000 }, async () => {
    mock.script({ sse: bigStream(16) });
    const caller = rawStream(path);
    const head = await caller.head;
    assert.match(head, /^HTTP\/1\.1 200/);
    caller.socket.pause();
    const pausedAt = Date.now();
    await waitFor('the upstream request to be closed', () => mock.aborted === 1, SEND_TIMEOUT_MS + 5000);
    const waited = Date.now() - pausedAt;
    assert.ok(waited >= SEND_TIMEOUT_MS - 50, `cut after ${waited} ms`);
    const u = await usageOf(gw, requestIdOf(head));
    assert.equal(u.status_code, 499);
    assert.equal(u.error_class, 'client_disconnected');
    assert.match(u.error_message, /stopped reading/);
    // The connection is gone: a caller that reads again finds it closed, short of the end.
    caller.socket.resume();
    const text = await caller.closed;
    assert.ok(!text.includes('[DONE]'));
  });
}

test('a caller that reads slowly but keeps reading gets the whole stream', { timeout: 30_000 }, async () => {
  mock.script({ sse: bigStream(16) });
  const caller = rawStream('/v1/chat/completions');
  await caller.head;
  const startedAt = Date.now();
  // Read in short bursts with longer pauses: every pause is well under send_timeout_ms, and the
  // stream lasts several times longer than it. A burst ends after 10 ms or 2 MiB, whichever comes
  // first, so the 16 MiB stream takes at least eight pauses however fast this host reads.
  let timer: NodeJS.Timeout | undefined;
  let burstFrom = 0;
  const pause = (): void => {
    clearTimeout(timer);
    caller.socket.pause();
    timer = setTimeout(read, 450);
  };
  const read = (): void => {
    burstFrom = caller.received();
    caller.socket.resume();
    timer = setTimeout(pause, 10);
  };
  caller.socket.on('data', () => {
    if (!caller.socket.isPaused() && caller.received() - burstFrom > 2 * 1024 * 1024) pause();
  });
  pause();
  const text = await caller.closed.finally(() => clearTimeout(timer));
  const u = await usageOf(gw, requestIdOf(text));
  assert.ok(text.includes('data: [DONE]'), `stream cut after ${caller.received()} bytes: ${u.error_message}`);
  assert.ok(Date.now() - startedAt > SEND_TIMEOUT_MS, 'the stream outlasted send_timeout_ms');
  assert.equal(mock.aborted, 0);
});

/**
 * A non-streamed request on a raw socket that never reads anything: the request id is the
 * caller's own (x-tollgate-request-id), so the records can be found without reading the head.
 */
function rawNeverReading(path: string, requestId: string, body: object): { socket: net.Socket; closed: Promise<void> } {
  const text = JSON.stringify(body);
  const url = new URL(gw.proxyUrl);
  const socket = net.connect(Number(url.port), url.hostname);
  socket.pause();
  socket.write(
    `POST ${path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${KEY}\r\ncontent-type: application/json\r\n` +
      `x-tollgate-request-id: ${requestId}\r\ncontent-length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
  );
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return { socket, closed };
}

async function inFlight(): Promise<number> {
  const text = await (await fetch(`${gw.metricsUrl}/metrics`)).text();
  const m = /^tollgate_proxy_in_flight_requests(?:\{[^}]*\})? (\d+)/m.exec(text);
  assert.ok(m, 'an in-flight gauge');
  return Number(m[1]);
}

for (const [name, path, stream] of [
  ['a JSON completion', '/v1/chat/completions', false],
  ['a buffered pass-through body', '/passthrough/r/v1/chat/completions', false],
  ['a stream request the upstream answered with one JSON completion', '/v1/chat/completions', true],
] as const) {
  test(`${name} of 5 MB to a caller that never reads is cut after send_timeout_ms, recorded 499`, { timeout: 30_000 }, async () => {
    mock.script({ json: chatCompletion({ content: 'x'.repeat(5 * 1024 * 1024) }) });
    const requestId = `e2e-never-reads-${path.length}-${stream}-${Date.now()}`;
    const sentAt = Date.now();
    const caller = rawNeverReading(path, requestId, { model: 'fast', stream, messages: [{ role: 'user', content: 'hi' }] });
    try {
      const u = await usageOf(gw, requestId, SEND_TIMEOUT_MS + 5000);
      const waited = Date.now() - sentAt;
      assert.ok(waited >= SEND_TIMEOUT_MS - 50, `recorded after ${waited} ms`);
      assert.equal(u.status_code, 499);
      assert.equal(u.error_class, 'client_disconnected');
      assert.match(u.error_message, /stopped reading/);
      const [access] = await waitForLines(gw, 'access', (l) => l.request_id === requestId);
      assert.equal(access.status, 499);
      assert.equal(access.error_kind, 'client_disconnected');
      // The gateway closed the connection: nothing of the response is held any more.
      caller.socket.resume();
      await caller.closed;
      assert.equal(await inFlight(), 0);
    } finally {
      caller.socket.destroy();
    }
  });
}

test('a caller that reads a 5 MB JSON completion slowly but steadily gets all of it', { timeout: 30_000 }, async () => {
  const content = 'x'.repeat(5 * 1024 * 1024);
  mock.script({ json: chatCompletion({ content }) });
  const body = JSON.stringify({ model: 'fast', messages: [{ role: 'user', content: 'hi' }] });
  const url = new URL(gw.proxyUrl);
  const socket = net.connect(Number(url.port), url.hostname);
  socket.write(
    `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${KEY}\r\ncontent-type: application/json\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
  socket.on('error', () => {});
  const chunks: Buffer[] = [];
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const startedAt = Date.now();
  // Take what the socket buffered every 50 ms (about 64 KiB: its read buffer): far shorter than
  // send_timeout_ms between reads, and the whole read lasts longer than it.
  const timer = setInterval(() => {
    for (let c: Buffer | null; (c = socket.read() as Buffer | null) !== null;) chunks.push(c);
  }, 50);
  await closed.finally(() => clearInterval(timer));
  const text = Buffer.concat(chunks).toString('utf8');
  const u = await usageOf(gw, requestIdOf(text));
  assert.equal(u.status_code, 200, u.error_message);
  assert.ok(text.endsWith('}') && text.includes(content), `cut after ${text.length} bytes`);
  assert.ok(Date.now() - startedAt > SEND_TIMEOUT_MS, 'the read outlasted send_timeout_ms');
});
