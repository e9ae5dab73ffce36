import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { startMockUpstream } from './mock-upstream.ts';
import { chmodSync } from 'node:fs';
import { dirname } from 'node:path';
import { openLoopBinary, parseOpenLoopOutput, rawRequest, runOpenLoopProcess, type OpenLoopSpec } from './open-loop.ts';
import { CHAT_PATH, REQUEST_JSON, REQUEST_SSE } from './workload.ts';

const run = (spec: OpenLoopSpec) => runOpenLoopProcess(spec, null);

/** A raw TCP server answering every request with `reply(n)` (the n-th request), written in the given pieces, `gapMs` apart. */
async function rawServer(reply: (n: number) => string[], gapMs = 3): Promise<{ port: number; close(): void }> {
  let n = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    // Each piece leaves when written (no Nagle hold against the generator's delayed acknowledgement).
    socket.setNoDelay(true);
    socket.on('close', () => sockets.delete(socket));
    let pending = '';
    socket.on('data', (d) => {
      pending += d.toString('latin1');
      for (;;) {
        const end = pending.indexOf('\r\n\r\n');
        if (end < 0) return;
        const length = Number(/content-length: (\d+)/i.exec(pending.slice(0, end))?.[1] ?? 0);
        if (pending.length < end + 4 + length) return;
        pending = pending.slice(end + 4 + length);
        const pieces = reply(n++);
        // Each piece its own write, a few ms apart: the generator must join them.
        pieces.forEach((piece, i) =>
          setTimeout(() => {
            if (!socket.writable) return;
            if (piece === 'CLOSE') socket.end();
            else if (piece === 'RESET') socket.resetAndDestroy();
            else socket.write(piece);
          }, i * gapMs),
        );
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.address() as AddressInfo).port,
    close() {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

test('against the mock: every scheduled request answered, the warmup not recorded, TTFB of streams', async () => {
  const mock = await startMockUpstream();
  try {
    const url = `http://127.0.0.1:${mock.port}${CHAT_PATH}`;
    const json = await run({ url, body: REQUEST_JSON, stream: false, rate: 200, warmupSec: 0.2, durationSec: 0.5 });
    assert.equal(json.scheduled, 100);
    assert.equal(json.ok, 100);
    assert.equal(json.errors, 0);
    assert.equal(json.latencyUs.count, 100);
    assert.equal(json.ttfbUs, null);
    assert.ok(json.elapsedSec > 0.4 && json.elapsedSec < 1, `elapsed ${json.elapsedSec}`);

    const sse = await run({ url, body: REQUEST_SSE, stream: true, rate: 200, warmupSec: 0, durationSec: 0.25 });
    assert.equal(sse.ok, 50);
    assert.ok(sse.ttfbUs!.p50 <= sse.latencyUs.p50, 'first byte comes no later than the end');
  } finally {
    await mock.close();
  }
});

test('keeps the schedule when the target is slow (it does not wait for replies)', async () => {
  // Answers after 300 ms: a closed loop of one would send 2 requests in 0.5 s, the open loop sends 50.
  const server = http.createServer((req, res) => {
    req.resume();
    setTimeout(() => res.end('{}'), 300);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  try {
    const port = (server.address() as AddressInfo).port;
    const r = await run({ url: `http://127.0.0.1:${port}/`, body: '{}', stream: false, rate: 100, warmupSec: 0, durationSec: 0.5 });
    assert.equal(r.ok, 50);
    assert.ok(r.latencyUs.p50 >= 290_000, `p50 ${r.latencyUs.p50}`);
    assert.ok(r.sendLagUs.p99 < 5_000, `lag ${r.sendLagUs.p99}`);
  } finally {
    server.closeAllConnections();
    server.close();
  }
});

test('counts failures, caps in-flight requests and stops by itself', async () => {
  const hang = http.createServer((req) => req.resume()); // never answers
  await new Promise<void>((r) => hang.listen(0, '127.0.0.1', () => r()));
  try {
    const port = (hang.address() as AddressInfo).port;
    const t0 = Date.now();
    const r = await run({ url: `http://127.0.0.1:${port}/`, body: '{}', stream: false, rate: 100, warmupSec: 0, durationSec: 0.3, timeoutMs: 200, maxInFlight: 5 });
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

test('replies in pieces: a length, chunks split anywhere, a body that ends with the connection; every status but 200 and a stream without [DONE] fail', async () => {
  const json = '{"ok":true}';
  const chunked = (events: string[]): string => `${events.map((e) => `${Buffer.byteLength(e).toString(16)}\r\n${e}\r\n`).join('')}0\r\n\r\n`;
  const stream = `HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n${chunked(['data: {"a":1}\n\n', `data: ${'x'.repeat(300)}\n\n`, 'data: [DONE]\n\n'])}`;
  const replies: Record<number, string[]> = {
    0: [`HTTP/1.1 200 OK\r\nContent-Length: ${json.length}\r\n\r\n{"ok"`, ':true}'],
    // Cut every 7 bytes: through the head, the chunk sizes, their line ends and the data.
    1: Array.from({ length: Math.ceil(stream.length / 7) }, (_, i) => stream.slice(i * 7, i * 7 + 7)),
    2: ['HTTP/1.1 200 OK\r\nconnection: close\r\n\r\ndata: x\n\n', 'data: [DONE]\n\n', 'CLOSE'],
    3: [`HTTP/1.1 500 Internal Server Error\r\ncontent-length: 2\r\n\r\n{}`],
    4: ['HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n9\r\ndata: x\n\n\r\n0\r\n\r\n'],
  };
  const server = await rawServer((n) => replies[n] ?? replies[0]);
  try {
    const r = await run({ url: `http://127.0.0.1:${server.port}/`, body: '{}', stream: true, rate: 2, warmupSec: 0, durationSec: 2.5, maxInFlight: 1 });
    assert.equal(r.scheduled, 5);
    // 0 (no [DONE]: it is not a stream), 3 (status) and 4 (no [DONE]) fail; 1 and 2 are whole streams.
    assert.equal(r.ok, 2, JSON.stringify(r));
    assert.equal(r.errors, 3);
    assert.equal(r.dropped, 0, 'one connection, each reply done before the next request');
    assert.ok(r.ttfbUs!.max < r.latencyUs.max, 'the streams\' first bytes came before their ends');

    const plain = await rawServer(() => replies[0]);
    try {
      const j = await run({ url: `http://127.0.0.1:${plain.port}/`, body: '{}', stream: false, rate: 50, warmupSec: 0, durationSec: 0.1, maxInFlight: 1 });
      assert.equal(j.ok, 5, `a length split over two writes, on one kept-alive connection: ${JSON.stringify(j)}`);
      assert.ok(j.latencyUs.max < 20_000, `each reply ends with its last piece (${j.latencyUs.max} µs)`);
    } finally {
      plain.close();
    }
    const failing = await rawServer(() => replies[3]);
    try {
      const f = await run({ url: `http://127.0.0.1:${failing.port}/`, body: '{}', stream: false, rate: 50, warmupSec: 0, durationSec: 0.1 });
      assert.equal(f.errors, 5);
      assert.equal(f.firstError, 'status 500');
    } finally {
      failing.close();
    }
  } finally {
    server.close();
  }
});

test('a reply that closes its connection (Connection: close, HTTP/1.0) is whole, and the next request takes another; a reset body is a failure', async () => {
  const closing = await rawServer((n) => [n % 2 === 0 ? 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}' : 'HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\n{}', 'CLOSE'], 10);
  try {
    // 2,000 a second: the next request is due before the server's close has arrived.
    const r = await run({ url: `http://127.0.0.1:${closing.port}/`, body: '{}', stream: false, rate: 2000, warmupSec: 0, durationSec: 0.5, maxInFlight: 16 });
    // Ignoring the close cost 137 false errors of 1,000. On a loaded machine a clean run sees a few
    // connections closed before their reply, out of 1,000 opened in half a second: 2 with the
    // suite running, 8 with two suites at once; the cause is not pinned down, so up to 2% is
    // tolerated, well clear of the 14% the bug costs.
    assert.equal(r.ok + r.dropped + r.errors, 1000);
    assert.ok(r.errors <= 20, `${r.errors} errors, first: ${String(r.firstError)}`);
  } finally {
    closing.close();
  }
  const resetting = await rawServer(() => ['HTTP/1.1 200 OK\r\n\r\npartial body', 'RESET']);
  try {
    const r = await run({ url: `http://127.0.0.1:${resetting.port}/`, body: '{}', stream: false, rate: 50, warmupSec: 0, durationSec: 0.2 });
    assert.deepEqual([r.ok, r.errors], [0, 10], 'a body cut by a reset is no reply');
    assert.equal(r.firstError, 'connection closed mid-reply');
  } finally {
    resetting.close();
  }
});

test('the request goes out as given: method, path, host, headers, length, body', () => {
  const raw = rawRequest(new URL('http://127.0.0.1:8080/v1/chat/completions?x=1'), { url: '', body: '{"é":1}', headers: { authorization: 'Bearer k' }, stream: false, rate: 1, warmupSec: 0, durationSec: 1 });
  assert.equal(
    raw.toString('utf8'),
    'POST /v1/chat/completions?x=1 HTTP/1.1\r\nhost: 127.0.0.1:8080\r\nauthorization: Bearer k\r\ncontent-type: application/json\r\ncontent-length: 8\r\n\r\n{"é":1}',
  );
});

test('the output parses into a result; anything else is refused', () => {
  const spec: OpenLoopSpec = { url: '', body: '', stream: true, rate: 10, warmupSec: 0, durationSec: 1 };
  const r = parseOpenLoopOutput(spec, '10 2 1 7 1000000\nstatus 503\n300.5 120.0 4.0\n500.0 150.0 8.0\n');
  assert.deepEqual([r.scheduled, r.ok, r.errors, r.dropped, r.elapsedSec, r.firstError], [10, 2, 1, 7, 1, 'status 503']);
  assert.deepEqual([r.latencyUs.p50, r.latencyUs.max, r.ttfbUs?.max, r.sendLagUs.max], [300.5, 500, 150, 8]);
  assert.equal(parseOpenLoopOutput(spec, '0 0 0 0 0\n\n').firstError, null);
  assert.throws(() => parseOpenLoopOutput(spec, 'garbage'), /unparsable/);
});

test('refuses anything but loopback and unbounded runs', async () => {
  await assert.rejects(run({ url: 'http://example.com/', body: '', stream: false, rate: 1, warmupSec: 0, durationSec: 1 }), /127\.0\.0\.1/);
  await assert.rejects(run({ url: 'http://127.0.0.1:1/', body: '', stream: false, rate: 1, warmupSec: 0, durationSec: 1e6 }), /durationSec/);
});

test('the binary is built once into a directory of this user alone, and refused from one others can write to', () => {
  const binary = openLoopBinary();
  assert.equal(openLoopBinary(), binary, 'built once');
  const dir = dirname(binary);
  chmodSync(dir, 0o777);
  try {
    assert.throws(() => openLoopBinary(), /is not this user's alone/);
  } finally {
    chmodSync(dir, 0o700);
  }
  assert.equal(openLoopBinary(), binary);
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
