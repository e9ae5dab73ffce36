import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import zlib from 'node:zlib';
import type { AddressInfo } from 'node:net';
import { callUpstream, closeUpstreamPools, compileEndpoint, readResponseBody, upstreamPools, type UpstreamCall, type UpstreamResponse } from './upstream.ts';

type Script = (req: http.IncomingMessage, res: http.ServerResponse) => void;

let server: http.Server;
let origin = '';
const scripts = new Map<string, Script>();
const seen: Array<{ path: string; headers: http.IncomingHttpHeaders; body: string }> = [];

before(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString() });
      const script = scripts.get(req.url ?? '');
      if (script === undefined) res.end('{}');
      else script(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(() => {
  closeUpstreamPools();
  server.closeAllConnections();
  server.close();
});

function call(path: string, over: Partial<UpstreamCall> = {}): Promise<Awaited<ReturnType<typeof callUpstream>>> {
  return callUpstream({ endpoint: compileEndpoint(origin + path), method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}', connectTimeoutMs: 1000, headersTimeoutMs: 2000, ...over });
}

function ok(result: Awaited<ReturnType<typeof callUpstream>>): UpstreamResponse {
  assert.equal(result.ok, true, JSON.stringify(result));
  return (result as { response: UpstreamResponse }).response;
}

describe('callUpstream', () => {
  test('sends method, path, headers and body; numbers become header strings; expect is not forwarded', async () => {
    const res = ok(await call('/echo?x=1', { headers: { 'x-n': 7, expect: '100-continue', 'content-length': 7 } }));
    const body = await readResponseBody(res, 1000);
    assert.equal(body.ok, true);
    const last = seen.at(-1)!;
    assert.equal(last.path, '/echo?x=1');
    assert.equal(last.body, '{"a":1}');
    assert.equal(last.headers['x-n'], '7');
    assert.equal(last.headers.expect, undefined);
  });

  test('repeated response headers are joined as Node joins them; set-cookie stays a list; rawHeaders pairs them', async () => {
    scripts.set('/dup', (_req, res) => {
      res.setHeader('x-multi', ['a', 'b']);
      res.setHeader('set-cookie', ['s=1', 't=2']);
      res.setHeader('content-type', 'application/json');
      res.end('{}');
    });
    const res = ok(await call('/dup'));
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['x-multi'], 'a, b');
    assert.deepEqual(res.headers['set-cookie'], ['s=1', 't=2']);
    assert.equal(res.headers['content-type'], 'application/json');
    const raw = res.rawHeaders;
    assert.deepEqual(raw.slice(raw.indexOf('set-cookie'), raw.indexOf('set-cookie') + 4), ['set-cookie', 's=1', 'set-cookie', 't=2']);
    await readResponseBody(res, 1000);
  });

  test('a body that arrived before any listener is delivered once one is attached, then end and close', async () => {
    scripts.set('/early', (_req, res) => res.end('hello'));
    const res = ok(await call('/early'));
    // Let the whole body arrive with nobody listening.
    await new Promise((r) => setTimeout(r, 50));
    const events: string[] = [];
    res.on('data', (c: Buffer) => events.push(`data:${c.toString()}`));
    res.on('end', () => events.push('end'));
    res.on('close', () => events.push('close'));
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(events, ['data:hello', 'end', 'close']);
    assert.equal(res.complete, true);
  });

  test('pause stops delivery until resume', async () => {
    scripts.set('/slow', (_req, res) => {
      res.write('one');
      setTimeout(() => res.end('two'), 30);
    });
    const res = ok(await call('/slow'));
    const got: string[] = [];
    res.on('data', (c: Buffer) => {
      got.push(c.toString());
      if (got.length === 1) res.pause();
    });
    const ended = new Promise<void>((resolve) => res.once('end', () => resolve()));
    await new Promise((r) => setTimeout(r, 80));
    assert.deepEqual(got, ['one'], 'nothing more while paused');
    res.resume();
    await ended;
    assert.deepEqual(got, ['one', 'two']);
  });

  test('destroy ends the exchange with close only; the connection breaking mid-body emits error then close', async () => {
    scripts.set('/hang', (_req, res) => res.write('partial'));
    const a = ok(await call('/hang'));
    const ev: string[] = [];
    a.on('error', () => ev.push('error'));
    a.on('close', () => ev.push('close'));
    a.destroy();
    assert.deepEqual(ev, ['close']);
    assert.equal(a.destroyed, true);

    scripts.set('/break', (req, res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('short');
      setTimeout(() => req.socket.destroy(), 20);
    });
    const b = ok(await call('/break'));
    const read = await readResponseBody(b, 1000);
    assert.deepEqual(read, { ok: false, kind: 'transport', message: 'upstream connection broke while sending the body' });
  });

  test('no head within headersTimeoutMs → timeout; the request is aborted', async () => {
    scripts.set('/never', () => {});
    const r = await call('/never', { headersTimeoutMs: 50 });
    assert.deepEqual(r, { ok: false, kind: 'timeout', message: 'upstream request timed out after 50ms' });
  });

  test('cancellation before the head settles as aborted', async () => {
    scripts.set('/wait', () => {});
    let cancel: () => void = () => {};
    const pending = call('/wait', { cancel: { onCancel: (fn) => ((cancel = fn), () => {}) } });
    setTimeout(() => cancel(), 20);
    assert.deepEqual(await pending, { ok: false, kind: 'aborted', message: 'client disconnected' });
  });

  test('a refused connection is a transport failure naming the origin and the code only', async () => {
    const probe = net.createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const r = await callUpstream({ endpoint: compileEndpoint(`http://127.0.0.1:${port}/v1/secret-path?key=s3cr3t`), method: 'GET', headers: {}, connectTimeoutMs: 1000, headersTimeoutMs: 1000 });
    assert.deepEqual(r, { ok: false, kind: 'transport', message: `upstream http://127.0.0.1:${port} unreachable: ECONNREFUSED` });
  });

  test('a connect that does not complete within connectTimeoutMs is a timeout, on time', async () => {
    // A listener whose process is stopped with its accept queue full: new SYNs go unanswered.
    const child = spawn(process.execPath, ['-e', "const s = require('net').createServer(); s.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => console.log(s.address().port))"], { stdio: ['ignore', 'pipe', 'inherit'] });
    const fillers: net.Socket[] = [];
    try {
      const port = await new Promise<number>((resolve) => child.stdout.once('data', (d: Buffer) => resolve(Number(String(d).trim()))));
      process.kill(child.pid!, 'SIGSTOP');
      for (let i = 0; i < 4; i++) fillers.push(net.connect(port, '127.0.0.1').on('error', () => {}));
      await new Promise((r) => setTimeout(r, 100));
      const started = performance.now();
      const r = await callUpstream({ endpoint: compileEndpoint(`http://127.0.0.1:${port}/v1`), method: 'GET', headers: {}, connectTimeoutMs: 100, headersTimeoutMs: 5000 });
      const elapsed = performance.now() - started;
      assert.deepEqual(r, { ok: false, kind: 'timeout', message: `connect to http://127.0.0.1:${port} timed out after 100ms` });
      assert.ok(elapsed < 400, `bounded at 100 ms, took ${elapsed.toFixed(0)} ms`);
    } finally {
      for (const f of fillers) f.destroy();
      child.kill('SIGKILL');
    }
  });

  test('a header undici refuses fails as a transport error, without throwing', async () => {
    const r = await call('/x', { headers: { 'transfer-encoding': 'chunked' } });
    assert.equal(r.ok, false);
    assert.equal((r as { kind: string }).kind, 'transport');
  });

  test('decodeBody: a gzip or br body is delivered decoded, chunks held before it included; an unknown coding is refused; a corrupt one fails as undecodable, not as a broken connection', async () => {
    const text = 'data: {"x":"h\u00e9"}\n\n'.repeat(200);
    for (const [coding, encode] of [['gzip', zlib.gzipSync], ['br', zlib.brotliCompressSync]] as const) {
      scripts.set('/z', (_req, res) => {
        res.setHeader('content-encoding', coding);
        res.end(encode(Buffer.from(text)));
      });
      const res = ok(await call('/z'));
      await new Promise((resolve) => setTimeout(resolve, 20)); // the whole body is held by now
      assert.equal(res.decodeBody(), true);
      assert.equal(res.headers['content-encoding'], undefined);
      const body = await readResponseBody(res, 1000);
      assert.equal(body.ok && body.body.toString(), text, coding);
    }
    scripts.set('/z', (_req, res) => {
      res.setHeader('content-encoding', 'compress');
      res.end('x');
    });
    const unknown = ok(await call('/z'));
    assert.equal(unknown.decodeBody(), false);
    unknown.destroy();
    scripts.set('/z', (_req, res) => {
      res.setHeader('content-encoding', 'gzip');
      res.end('not gzip');
    });
    const corrupt = ok(await call('/z'));
    corrupt.decodeBody();
    assert.deepEqual(await readResponseBody(corrupt, 1000), { ok: false, kind: 'decode', message: 'upstream body is not valid gzip' });
    assert.equal(corrupt.undecodable, 'upstream body is not valid gzip');
  });

  test('pool sets: one per TLS setting, one dispatcher per connect timeout', () => {
    assert.equal(upstreamPools(), upstreamPools());
    const insecure = upstreamPools({ verify: false });
    assert.notEqual(insecure, upstreamPools());
    assert.equal(upstreamPools({ verify: false }), insecure);
    assert.notEqual(upstreamPools({ verify: true, caCert: 'x' }), upstreamPools({ verify: true, caCert: 'y' }));
    const pools = upstreamPools();
    assert.equal(pools.dispatcher(1000), pools.dispatcher(1000));
    assert.notEqual(pools.dispatcher(1000), pools.dispatcher(2000));
  });
});

/**
 * A raw HTTP/1.1 upstream: `onRequest(socket, n)` handles the n-th request (1-based) of each
 * connection; `answer` writes a small keep-alive JSON response. Counts connections and requests.
 */
async function rawUpstream(onRequest: (socket: net.Socket, n: number) => void): Promise<{ origin: string; requests: () => number; connections: () => number; close: () => void }> {
  let requests = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    let n = 0;
    let buffered = '';
    socket.on('data', (d) => {
      buffered += d.toString('latin1');
      for (let end = buffered.indexOf('\r\n\r\n'); end >= 0; end = buffered.indexOf('\r\n\r\n')) {
        const length = Number(/content-length: (\d+)/i.exec(buffered.slice(0, end))?.[1] ?? 0);
        if (buffered.length < end + 4 + length) return;
        buffered = buffered.slice(end + 4 + length);
        requests++;
        onRequest(socket, ++n);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: () => requests,
    connections: () => sockets.size,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

const answer = (socket: net.Socket): void => {
  socket.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}');
};

describe('a kept-alive connection the upstream closed', () => {
  // The pool hands a connection out again once it has seen nothing more arrive on it (a turn of
  // the event loop later); until then a new request opens another connection.
  const callAt = async (origin: string, resendOnStaleConnection = true) => {
    await new Promise((resolve) => setTimeout(resolve, 10));
    return callUpstream({ endpoint: compileEndpoint(origin + '/v1/x'), method: 'POST', headers: {}, body: '{}', connectTimeoutMs: 1000, headersTimeoutMs: 2000, resendOnStaleConnection });
  };

  for (const [how, close] of [['closed', (s: net.Socket) => s.end()], ['reset', (s: net.Socket) => s.resetAndDestroy()]] as const) {
    test(`${how} as the next request arrives: the request is sent again on another connection`, async () => {
      // Every connection answers its first request and drops its second unanswered.
      const up = await rawUpstream((socket, n) => (n === 1 ? answer(socket) : close(socket)));
      try {
        const first = await readResponseBody(ok(await callAt(up.origin)), 1000);
        assert.equal(first.ok, true);
        const second = await readResponseBody(ok(await callAt(up.origin)), 1000);
        assert.equal(second.ok, true);
        assert.equal(up.requests(), 3);
        assert.equal(up.connections(), 2);
      } finally {
        up.close();
      }
    });
  }

  test('a caller that promises one upstream request per call (pass-through) gets the failure, not a resend', async () => {
    const up = await rawUpstream((socket, n) => (n === 1 ? answer(socket) : socket.resetAndDestroy()));
    try {
      assert.equal((await readResponseBody(ok(await callAt(up.origin, false)), 1000)).ok, true);
      const r = await callAt(up.origin, false);
      assert.equal(r.ok, false);
      assert.equal((r as { kind: string }).kind, 'transport');
      assert.equal(up.requests(), 2);
    } finally {
      up.close();
    }
  });

  test('a new connection closed before any response byte is not sent again (the upstream may have read it)', async () => {
    const up = await rawUpstream((socket) => socket.end());
    try {
      const r = await callAt(up.origin);
      assert.equal(r.ok, false);
      assert.equal((r as { kind: string }).kind, 'transport');
      assert.equal(up.requests(), 1);
    } finally {
      up.close();
    }
  });

  test('a kept-alive connection closed after the response began is not sent again', async () => {
    const up = await rawUpstream((socket, n) => {
      if (n === 1) answer(socket);
      else socket.end('HTTP/1.1 200 OK\r\ncontent-');
    });
    try {
      assert.equal((await readResponseBody(ok(await callAt(up.origin)), 1000)).ok, true);
      const r = await callAt(up.origin);
      assert.equal(r.ok, false);
      assert.equal(up.requests(), 2);
    } finally {
      up.close();
    }
  });
});

describe('interim 1xx responses before the real one', () => {
  // An unsolicited 100 Continue is not among them: undici's HTTP/1.1 parser destroys the connection
  // on one ("bad response", client-h1.js onHeadersComplete) before any handler sees it, so such a
  // call fails as transport (502 at the caller); docs/errors.md says so.
  const cases = [
    { interim: 'HTTP/1.1 102 Processing\r\n\r\n' },
    { interim: 'HTTP/1.1 103 Early Hints\r\nlink: </a.css>; rel=preload\r\n\r\n' },
  ];
  for (const { interim } of cases) {
    test(`${interim.split('\r\n')[0]}: skipped, the final response is the answer, the connection kept`, async () => {
      const up = await rawUpstream((socket) => {
        socket.write(interim);
        answer(socket);
      });
      try {
        for (let i = 0; i < 2; i++) {
          await new Promise((resolve) => setTimeout(resolve, 10));
          const r = await callUpstream({ endpoint: compileEndpoint(up.origin + '/v1/x'), method: 'POST', headers: {}, body: '{}', connectTimeoutMs: 1000, headersTimeoutMs: 2000 });
          assert.equal(r.ok, true, JSON.stringify(r));
          const response = ok(r);
          assert.equal(response.statusCode, 200);
          const body = await readResponseBody(response, 1000);
          assert.equal(body.ok && body.body.toString(), '{}');
        }
        assert.equal(up.connections(), 1);
      } finally {
        up.close();
      }
    });
  }
});
