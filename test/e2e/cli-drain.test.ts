// E2E: graceful shutdown of `tollgate start`. On SIGTERM or SIGINT the probes turn 503 at once
// while the listener keeps accepting for shutdown.min_drain_secs, an in-flight request still
// completes, and the process exits 0; with an upstream that hangs, shutdown.drain_timeout_secs
// bounds the wait. Each case needs its own process (it ends it); they run concurrently.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import OpenAI from 'openai';
import { startGateway, type Gateway } from '../harness/spawn.ts';
import { startMockUpstream, chatChunks, chatCompletion, type MockUpstream } from '../harness/mock-upstream.ts';

const CALLER_KEY = 'sk-e2e-drain-caller';
const SLOW_MS = 1500;
const HANG_MS = 10_000;
/** Gap between a slow stream's events: five of them keep a drain waiting about 2.5 s. */
const STREAM_GAP_MS = 500;

let mock: MockUpstream;

before(async () => {
  mock = await startMockUpstream();
  // The model name picks the behaviour, so concurrent cases share one mock.
  mock.setFallback((req) =>
    req.json?.model === 'stream-up'
      ? { sse: chatChunks({ model: 'stream-up', parts: ['slow', ' stream'] }), delayBetweenEventsMs: STREAM_GAP_MS }
      : { delayHeadersMs: req.json?.model === 'hang-up' ? HANG_MS : SLOW_MS, json: chatCompletion({ model: req.json?.model, content: 'slow answer' }) },
  );
});
after(() => mock?.close());

function resources() {
  return {
    _format_version: '1',
    provider_keys: [{ display_name: 'up', provider: 'openai', api_key: 'sk-upstream', api_base: `${mock.url}/v1` }],
    models: [
      { display_name: 'slow', provider: 'openai', model_name: 'slow-up', provider_key: 'up' },
      { display_name: 'hang', provider: 'openai', model_name: 'hang-up', provider_key: 'up' },
      { display_name: 'stream', provider: 'openai', model_name: 'stream-up', provider_key: 'up' },
    ],
    api_keys: [{ display_name: 'caller', key_hash: createHash('sha256').update(CALLER_KEY).digest('hex'), allowed_models: ['*'], allowed_routes: ['*'] }],
    passthrough_routes: [{ name: 'pt', path_prefix: '/passthrough/pt', target_url: mock.url, provider_key: 'up' }],
  };
}

const ADMIN_KEY = 'e2e-drain-admin-key';

function start(shutdown: { min_drain_secs: number; drain_timeout_secs?: number }, admin = false): Promise<Gateway> {
  return startGateway({
    config: {
      proxy: { addr: '127.0.0.1:0' },
      observability: { metrics: { prometheus: { addr: '127.0.0.1:0' } } },
      shutdown,
      ...(admin ? { admin: { enabled: true, addr: '127.0.0.1:0', admin_keys: [ADMIN_KEY] } } : {}),
    },
    resources: resources(),
  });
}

/** Send a chat request whose prompt is `marker`, so concurrent cases can tell theirs apart on the shared mock. */
function ask(gw: Gateway, model: string, marker: string) {
  const openai = new OpenAI({ baseURL: `${gw.proxyUrl}/v1`, apiKey: CALLER_KEY, maxRetries: 0, timeout: 20_000 });
  return openai.chat.completions.create({ model, messages: [{ role: 'user', content: marker }] });
}

/** Wait until the mock received the request with this prompt (the gateway is mid-request). */
async function upstreamHas(marker: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!mock.requests.some((r) => r.json?.messages?.[0]?.content === marker)) {
    if (Date.now() > deadline) assert.fail(`the upstream never received the request "${marker}"`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The exit of the process, or a failure after ms. */
async function exitWithin(gw: Gateway, ms: number): Promise<{ code: number | null; signal: string | null }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`tollgate did not exit within ${ms} ms\n${gw.stderrText()}`)), ms);
  });
  try {
    return await Promise.race([gw.exited, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Stops reading the gateway's stderr, then sends `count` requests to an unrouted path: one 404 access line each. */
async function logUnread(gw: Gateway, count: number): Promise<void> {
  gw.proc.stderr!.pause();
  for (let i = 0; i < count; i += 16) {
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        const res = await fetch(`${gw.proxyUrl}/nowhere`);
        await res.arrayBuffer();
      }),
    );
  }
}

/** A fresh connection's GET (no keep-alive reuse), as a load balancer's health check makes it. */
async function probe(gw: Gateway, path: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`${gw.proxyUrl}${path}`, { headers: { connection: 'close' } });
  return { status: res.status, body: await res.text() };
}

function refused(gw: Gateway): Promise<boolean> {
  const { hostname, port } = new URL(gw.proxyUrl);
  return new Promise((resolve) => {
    const s = net.connect(Number(port), hostname);
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', () => resolve(true));
  });
}

/**
 * An admin request held in flight by its body: the head and the first half of the body now, the
 * rest on `finish()`. `answer` is the raw HTTP answer, '' when the connection closed without one.
 */
async function slowAdminRequest(gw: Gateway): Promise<{ finish: () => void; answer: Promise<string> }> {
  const { hostname, port } = new URL(gw.adminUrl!);
  const socket = net.connect(Number(port), hostname);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const body = JSON.stringify({ probe: 'admin-drain' });
  const half = Math.floor(body.length / 2);
  socket.write(`POST /tollgate/admin/health HTTP/1.1\r\nhost: admin\r\nauthorization: Bearer ${ADMIN_KEY}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body.slice(0, half)}`);
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  const answer = new Promise<string>((resolve) => {
    socket.once('close', () => resolve(Buffer.concat(chunks).toString()));
    socket.once('error', () => {});
  });
  return {
    finish: () => {
      if (!socket.destroyed) socket.end(body.slice(half));
    },
    answer,
  };
}

describe('graceful shutdown', { concurrency: true }, () => {
  test('SIGTERM: an admin request in flight completes too, then the process exits 0', async (t) => {
    const gw = await start({ min_drain_secs: 0, drain_timeout_secs: 10 }, true);
    t.after(() => gw.stop());
    const held = await slowAdminRequest(gw);
    // Let the head reach the admin app, so the request is in flight when the signal lands.
    await new Promise((r) => setTimeout(r, 200));
    gw.signal('SIGTERM');
    // Past the point where the drain found the proxy listener idle and went on.
    await new Promise((r) => setTimeout(r, 800));
    held.finish();
    const answer = await held.answer;
    // The route serves GET only: the admin app's own 404 proves the request reached its end.
    assert.match(answer, /^HTTP\/1\.1 404 /, `the admin request was cut: ${JSON.stringify(answer)}\n${gw.stderrText()}`);
    assert.match(answer, /"error_msg":"not found"/);
    const exit = await exitWithin(gw, 5_000);
    assert.deepEqual(exit, { code: 0, signal: null }, gw.stderrText());
  });

  test('drain_timeout_secs bounds the wait for an admin request too', async (t) => {
    const gw = await start({ min_drain_secs: 0, drain_timeout_secs: 1 }, true);
    t.after(() => gw.stop());
    const held = await slowAdminRequest(gw);
    await new Promise((r) => setTimeout(r, 200));
    const signalledAt = Date.now();
    gw.signal('SIGTERM');
    const exit = await exitWithin(gw, 5_000);
    const elapsed = Date.now() - signalledAt;
    assert.deepEqual(exit, { code: 0, signal: null }, gw.stderrText());
    assert.ok(elapsed >= 900 && elapsed < 4000, `exited ${elapsed} ms after SIGTERM; expected about the 1 s drain timeout`);
    assert.equal(await held.answer, '', 'the never-finished admin request is cut without an answer');
  });

  test('SIGTERM: probes 503 at once, the in-flight request completes with 200, exit 0', async (t) => {
    const gw = await start({ min_drain_secs: 1, drain_timeout_secs: 10 });
    t.after(() => gw.stop());
    const before = await probe(gw, '/readyz');
    assert.equal(before.status, 200);

    const inFlight = ask(gw, 'slow', 'sigterm');
    await upstreamHas('sigterm');
    const signalledAt = Date.now();
    gw.signal('SIGTERM');

    // Within min_drain the listener still accepts, and both probes fail at once.
    const deadline = signalledAt + 900;
    let live = await probe(gw, '/livez');
    while (live.status === 200 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
      live = await probe(gw, '/livez');
    }
    assert.equal(live.status, 503, '/livez still 200 during drain');
    // Answering at all proves the listener still accepts (it closes once min_drain_secs passed).
    assert.equal(await refused(gw), false, 'new connections refused before min_drain_secs passed');
    const ready = await probe(gw, '/readyz');
    assert.equal(ready.status, 503, '/readyz still 200 during drain');
    assert.equal(ready.body, 'shutting down');

    const r = await inFlight;
    assert.equal(r.model, 'slow');
    assert.equal(r.choices[0].message.content, 'slow answer');

    const exit = await exitWithin(gw, 8_000);
    assert.deepEqual(exit, { code: 0, signal: null }, gw.stderrText());
    assert.ok(Date.now() - signalledAt >= 900, 'exited before min_drain_secs had passed');
    assert.equal(gw.stdout.length, 1, `stdout: ${gw.stdout.join('\n')}`);
  });

  test('a SIGHUP while draining is ignored with one log line: no loader child starts, the stream in flight completes', async (t) => {
    const gw = await start({ min_drain_secs: 0, drain_timeout_secs: 10 });
    t.after(() => gw.stop());
    /** The gateway's child processes (a reload's loader is one). */
    const children = (): string => {
      try {
        return execFileSync('ps', ['--ppid', String(gw.proc.pid), '-o', 'pid=,args='], { encoding: 'utf8' }).trim();
      } catch {
        return ''; // ps exits 1 when nothing matches
      }
    };
    // A FIFO without a writer holds a loader that would read it until its load timeout (60 s):
    // a reload started now could not go unnoticed.
    fs.rmSync(gw.resourcesPath!);
    execFileSync('mkfifo', [gw.resourcesPath!]);
    const openai = new OpenAI({ baseURL: `${gw.proxyUrl}/v1`, apiKey: CALLER_KEY, maxRetries: 0, timeout: 20_000 });
    const stream = await openai.chat.completions.create({ model: 'stream', messages: [{ role: 'user', content: 'sighup-drain' }], stream: true });
    const reading = (async () => {
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
      return text;
    })();
    await upstreamHas('sighup-drain');
    assert.equal(children(), '', 'no child before the signals');
    gw.signal('SIGTERM');
    const deadline = Date.now() + 2_000;
    while (!gw.stderrText().includes('"draining"') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    gw.signal('SIGHUP');
    // A loader child is forked at once on SIGHUP; look for one for a while.
    for (let i = 0; i < 20; i++) {
      assert.equal(children(), '', `a child process started during the drain\n${gw.stderrText()}`);
      await new Promise((r) => setTimeout(r, 25));
    }
    assert.equal(await reading, 'slow stream', 'the stream in flight completes');
    const exit = await exitWithin(gw, 8_000);
    assert.deepEqual(exit, { code: 0, signal: null }, gw.stderrText());
    const ignored = gw.stderrText().split('\n').filter((l) => l.includes('SIGHUP ignored'));
    assert.equal(ignored.length, 1, gw.stderrText());
    assert.match(ignored[0], /draining/);
  });

  test('SIGINT drains too: the in-flight request completes with 200, exit 0', async (t) => {
    const gw = await start({ min_drain_secs: 0, drain_timeout_secs: 10 });
    t.after(() => gw.stop());
    const inFlight = ask(gw, 'slow', 'sigint');
    await upstreamHas('sigint');
    gw.signal('SIGINT');
    // min_drain_secs 0: the listener stops accepting right away, while the request is still running.
    const deadline = Date.now() + 1000;
    let isRefused = await refused(gw);
    while (!isRefused && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
      isRefused = await refused(gw);
    }
    assert.ok(isRefused, 'still accepting connections after SIGINT with min_drain_secs 0');
    const r = await inFlight;
    assert.equal(r.choices[0].message.content, 'slow answer');
    const exit = await exitWithin(gw, 8_000);
    assert.deepEqual(exit, { code: 0, signal: null }, gw.stderrText());
  });

  test('drain_timeout_secs bounds the wait for a hung upstream: exit 0 after about min_drain + timeout', async (t) => {
    const gw = await start({ min_drain_secs: 1, drain_timeout_secs: 1 });
    t.after(() => gw.stop());
    const inFlight = ask(gw, 'hang', 'hang').then(
      (r) => ({ ok: true as const, r }),
      (e: unknown) => ({ ok: false as const, e }),
    );
    // A pass-through exchange hangs the same way (the mock hangs on the body's model).
    const ptMarker = 'pt-hang';
    const ptInFlight = fetch(`${gw.proxyUrl}/passthrough/pt/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CALLER_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'hang-up', messages: [{ role: 'user', content: ptMarker }] }),
    }).then((r) => r.text()).catch(() => 'cut');
    await upstreamHas('hang');
    await upstreamHas(ptMarker);
    const signalledAt = Date.now();
    gw.signal('SIGTERM');
    const exit = await exitWithin(gw, 6_000);
    const elapsed = Date.now() - signalledAt;
    assert.deepEqual(exit, { code: 0, signal: null }, gw.stderrText());
    assert.ok(elapsed >= 1900, `exited after ${elapsed} ms, before min_drain (1 s) + drain timeout (1 s)`);
    assert.ok(elapsed < 5000, `exited after ${elapsed} ms; expected about 2 s (the upstream hangs ${HANG_MS} ms)`);
    // The cut request did not get a 200.
    const outcome = await inFlight;
    assert.equal(outcome.ok, false, 'the hung request cannot have completed');
    await ptInFlight;
    assert.match(gw.stderrText(), /drain timeout/);
    // The gateway cut them, not their callers: 503 shutting_down, never 499 client_disconnected.
    const lines = gw.stderrText().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
    const usage = lines.filter((l) => l.type === 'usage');
    const model = usage.find((l) => l.requested_model === 'hang');
    const pt = usage.find((l) => l.passthrough_route_name === 'pt');
    for (const row of [model, pt]) {
      assert.ok(row, gw.stderrText());
      assert.equal(row.status, 503);
      assert.equal(row.error_class, 'shutting_down');
      const access = lines.find((l) => l.type === 'access' && l.request_id === row.request_id);
      assert.equal(access?.status, 503);
      assert.equal(access?.error_kind, 'shutting_down');
    }
  });

  test('a second signal during the drain exits at once', async (t) => {
    const gw = await start({ min_drain_secs: 30 });
    t.after(() => gw.stop());
    // Not straight after the ready line: that race has its own test below.
    assert.equal((await probe(gw, '/readyz')).status, 200);
    gw.signal('SIGTERM');
    // Wait until the first signal was handled (the probes turn 503), then send the second.
    const deadline = Date.now() + 2000;
    while ((await probe(gw, '/readyz')).status !== 503) {
      if (Date.now() > deadline) assert.fail('the first SIGTERM was not handled');
      await new Promise((r) => setTimeout(r, 10));
    }
    const at = Date.now();
    gw.signal('SIGINT');
    const exit = await exitWithin(gw, 3_000);
    assert.ok(Date.now() - at < 3_000);
    assert.notEqual(exit.code, 0, 'an interrupted drain must not report a clean exit');
  });

  test('an idle gateway exits promptly: no shutdown bound outlives the drain', async (t) => {
    // The limiter's close bound (2 s) must not hold the exit once the limiter has closed.
    const gw = await start({ min_drain_secs: 0 });
    t.after(() => gw.stop());
    assert.equal((await probe(gw, '/readyz')).status, 200);
    const at = Date.now();
    gw.signal('SIGTERM');
    const exit = await exitWithin(gw, 5_000);
    assert.deepEqual(exit, { code: 0, signal: null }, gw.stderrText());
    assert.ok(Date.now() - at < 1500, `exited ${Date.now() - at} ms after SIGTERM`);
  });

  test('a log reader that stopped reading does not keep the process from exiting once drained', async (t) => {
    const gw = await start({ min_drain_secs: 0 });
    t.after(() => gw.stop());
    // Megabytes of access lines into a stderr nobody reads: the last batches wait for room in the
    // pipe, which would keep the event loop (and, at exit, a blocking write) waiting for good.
    await logUnread(gw, 4000);
    const unread = gw.stderrText().length;
    assert.ok(unread < 1_000_000, `the reader was stalled (${unread} bytes read)`);
    const at = Date.now();
    gw.signal('SIGTERM');
    // After the drain, EXIT_AFTER_DRAIN_MS (3 s), then at most 2 s at exit for room in the pipe.
    const exit = await exitWithin(gw, 10_000);
    assert.deepEqual(exit, { code: 0, signal: null });
    assert.ok(Date.now() - at < 8_000, `exited ${Date.now() - at} ms after SIGTERM`);
  });

  test('a log reader that is slow but reading gets every line before the process exits', async (t) => {
    const LINES = 4000;
    const gw = await start({ min_drain_secs: 0 });
    t.after(() => gw.stop());
    await logUnread(gw, LINES);
    gw.signal('SIGTERM');
    // One read every 300 ms: the ~1.5 MB the pipe could not hold take about 7 s, more than the
    // 3 s from the drain to the exit plus the 2 s the exit waits for a reader that takes nothing.
    // The gap between reads stays well under those 2 s, also on a loaded machine whose timers
    // run late (an 800 ms gap lost lines there now and then).
    const stderr = gw.proc.stderr!;
    const paced = (): void => {
      stderr.pause();
      setTimeout(() => stderr.resume(), 300);
    };
    stderr.on('data', paced);
    t.after(() => stderr.off('data', paced));
    stderr.resume();
    const exit = await exitWithin(gw, 30_000);
    assert.deepEqual(exit, { code: 0, signal: null });
    await new Promise((resolve) => (stderr.readableEnded ? resolve(undefined) : stderr.once('end', resolve)));
    const lines = gw.stderrText().split('\n');
    assert.equal(lines.filter((l) => l.includes('"type":"access"') && l.includes('"status":404')).length, LINES);
    assert.ok(lines.some((l) => l.includes('drain complete')));
  });

  test('a SIGTERM sent the moment the ready line is read still drains and exits 0', async (t) => {
    // An orchestrator may stop the process as soon as it reported ready; the signal handlers
    // must be in place by then, or the default action kills the process (no drain, exit by signal).
    const gw = await start({ min_drain_secs: 0, drain_timeout_secs: 5 });
    t.after(() => gw.stop());
    gw.signal('SIGTERM');
    const exit = await exitWithin(gw, 5_000);
    assert.deepEqual(exit, { code: 0, signal: null }, `killed instead of drained\n${gw.stderrText()}`);
  });
});
