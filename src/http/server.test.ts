import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { listen, type ListenerAnswer } from './server.ts';

/** Write `bytes` on a fresh connection and read until the listener closes it. */
function exchange(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(bytes));
    let got = '';
    socket.setEncoding('latin1').on('data', (d: string) => (got += d));
    socket.on('error', reject).on('close', () => resolve(got));
  });
}

test('CONNECT: 405 with the listener methods and a request id, reported; one pipelined behind a request waits for its answer', async (t) => {
  const answers: ListenerAnswer[] = [];
  const l = await listen({
    name: 'test',
    host: '127.0.0.1',
    port: 0,
    methods: 'GET, POST',
    onListenerAnswer: (a) => answers.push(a),
    handler: (req, res) => {
      // The answer to the request before the CONNECT takes a while.
      setTimeout(() => res.end(`answer to ${req.url}`), 150);
    },
  });
  t.after(() => l.server.close());
  const port = Number(l.address.split(':')[1]);

  const alone = await exchange(port, 'CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n');
  assert.match(alone, /^HTTP\/1\.1 405 Method Not Allowed\r\n/);
  assert.match(alone, /\r\nAllow: GET, POST\r\n/);
  const id = /\r\nx-tollgate-request-id: (\S+)\r\n/.exec(alone)?.[1];
  assert.ok(id);
  assert.deepEqual(answers.map((a) => [a.status, a.method, a.errorKind, a.requestId]), [[405, 'CONNECT', 'method_not_allowed', id]]);

  const pipelined = await exchange(port, 'GET /first HTTP/1.1\r\nHost: x\r\n\r\nCONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n');
  const first = pipelined.indexOf('answer to /first');
  const refusal = pipelined.indexOf('HTTP/1.1 405');
  assert.ok(pipelined.startsWith('HTTP/1.1 200 OK\r\n'), pipelined);
  assert.ok(first > 0 && refusal > first, `the GET's answer comes first, then the 405:\n${pipelined}`);
});
