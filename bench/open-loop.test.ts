import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { startMockUpstream } from './mock-upstream.ts';
import { runOpenLoop, runOpenLoopProcess } from './open-loop.ts';
import { CHAT_PATH, REQUEST_JSON, REQUEST_SSE } from './workload.ts';

test('open loop against the mock: every scheduled request answered, warmup not recorded', async () => {
  const mock = await startMockUpstream();
  try {
    const url = `http://127.0.0.1:${mock.port}${CHAT_PATH}`;
    const json = await runOpenLoop({ url, body: REQUEST_JSON, stream: false, rate: 200, warmupSec: 0.2, durationSec: 0.5 });
    assert.equal(json.scheduled, 100);
    assert.equal(json.ok, 100);
    assert.equal(json.errors, 0);
    assert.equal(json.latencyUs.count, 100);
    assert.equal(json.ttfbUs, null);
    assert.ok(json.elapsedSec > 0.4 && json.elapsedSec < 1, `elapsed ${json.elapsedSec}`);

    const sse = await runOpenLoop({ url, body: REQUEST_SSE, stream: true, rate: 200, warmupSec: 0, durationSec: 0.25 });
    assert.equal(sse.ok, 50);
    assert.ok(sse.ttfbUs!.p50 <= sse.latencyUs.p50, 'first byte comes no later than the end');
  } finally {
    await mock.close();
  }
});

test('open loop keeps the schedule when the target is slow (it does not wait for replies)', async () => {
  // Answers after 300 ms: a closed loop of one would send 2 requests in 0.5 s, the open loop sends 50.
  const server = http.createServer((req, res) => {
    req.resume();
    setTimeout(() => res.end('{}'), 300);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  try {
    const port = (server.address() as AddressInfo).port;
    const r = await runOpenLoop({ url: `http://127.0.0.1:${port}/`, body: '{}', stream: false, rate: 100, warmupSec: 0, durationSec: 0.5 });
    assert.equal(r.ok, 50);
    assert.ok(r.latencyUs.p50 >= 290_000, `p50 ${r.latencyUs.p50}`);
    assert.ok(r.sendLagUs.p50 < 20_000, `lag ${r.sendLagUs.p50}`);
  } finally {
    server.closeAllConnections();
    server.close();
  }
});

test('open loop counts failures, caps in-flight requests and stops by itself', async () => {
  const hang = http.createServer((req) => req.resume()); // never answers
  await new Promise<void>((r) => hang.listen(0, '127.0.0.1', () => r()));
  try {
    const port = (hang.address() as AddressInfo).port;
    const t0 = Date.now();
    const r = await runOpenLoop({
      url: `http://127.0.0.1:${port}/`,
      body: '{}',
      stream: false,
      rate: 100,
      warmupSec: 0,
      durationSec: 0.3,
      timeoutMs: 200,
      maxInFlight: 5,
    });
    assert.ok(Date.now() - t0 < 2000, 'bounded in time');
    assert.equal(r.ok, 0);
    assert.equal(r.errors + r.dropped, 30);
    assert.ok(r.dropped > 0, 'requests beyond maxInFlight are dropped');
    assert.match(r.firstError ?? '', /timeout/);
  } finally {
    hang.closeAllConnections();
    hang.close();
  }
});

test('open loop refuses anything but loopback and unbounded runs', () => {
  assert.throws(() => runOpenLoop({ url: 'http://example.com/', body: '', stream: false, rate: 1, warmupSec: 0, durationSec: 1 }), /127\.0\.0\.1/);
  assert.throws(() => runOpenLoop({ url: 'http://127.0.0.1:1/', body: '', stream: false, rate: 1, warmupSec: 0, durationSec: 1e6 }), /durationSec/);
});

test('mock answers 404 off the chat path', async () => {
  const mock = await startMockUpstream();
  try {
    const res = await fetch(`http://127.0.0.1:${mock.port}/v1/models`);
    assert.equal(res.status, 404);
  } finally {
    await mock.close();
  }
});

test('runOpenLoopProcess runs the generator as a child process and returns its result', async () => {
  const mock = await startMockUpstream();
  try {
    const url = `http://127.0.0.1:${mock.port}${CHAT_PATH}`;
    const r = await runOpenLoopProcess({ url, body: REQUEST_JSON, stream: false, rate: 100, warmupSec: 0, durationSec: 0.3 }, null);
    assert.equal(r.scheduled, 30);
    assert.equal(r.ok, 30);
    assert.equal(r.errors, 0);
    await assert.rejects(
      runOpenLoopProcess({ url: 'http://localhost:1/', body: '{}', stream: false, rate: 10, warmupSec: 0, durationSec: 0.1 }, null),
      /open-loop: exit 1: .*only 127\.0\.0\.1 targets allowed/s,
    );
  } finally {
    await mock.close();
  }
});
