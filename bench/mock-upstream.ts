// Fast mock OpenAI upstream for the benchmark: node:http, precomputed bodies, no JSON parsing.
// `POST /v1/chat/completions` answers the 665 B chat.completion, or, when the body asks for
// `"stream": true`, 24 chunk events + a usage chunk + `[DONE]`, each event its own write so a
// proxy sees a stream arrive in pieces rather than one buffer.
// Run as a script it listens on 127.0.0.1 (port from argv[2], default 0) and prints
// `{"event":"ready","listeners":{"upstream":"127.0.0.1:PORT"}}` on stdout.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { CHAT_PATH, RESPONSE_JSON, RESPONSE_SSE_EVENTS, wantsStream } from './workload.ts';

const JSON_HEADERS = {
  'content-type': 'application/json',
  'content-length': String(RESPONSE_JSON.length),
  'x-request-id': 'req_bench',
};
const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-request-id': 'req_bench',
};

function handle(req: http.IncomingMessage, res: http.ServerResponse): void {
  if (req.method !== 'POST' || req.url !== CHAT_PATH) {
    req.resume();
    res.writeHead(404, { 'content-length': '0' });
    res.end();
    return;
  }
  let body = '';
  req.setEncoding('latin1');
  req.on('data', (chunk: string) => {
    body += chunk;
  });
  req.on('end', () => {
    if (!wantsStream(body)) {
      res.writeHead(200, JSON_HEADERS);
      res.end(RESPONSE_JSON);
      return;
    }
    res.writeHead(200, SSE_HEADERS);
    const last = RESPONSE_SSE_EVENTS.length - 1;
    for (let i = 0; i < last; i++) res.write(RESPONSE_SSE_EVENTS[i]);
    res.end(RESPONSE_SSE_EVENTS[last]);
  });
}

export interface MockUpstream {
  server: http.Server;
  port: number;
  close(): Promise<void>;
}

/** Starts the mock on 127.0.0.1:`port` (0 = any free port). */
export async function startMockUpstream(port = 0): Promise<MockUpstream> {
  const server = http.createServer(handle);
  // Longer than any client's idle keep-alive, so a proxy never reuses a socket we are closing.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

if (import.meta.main) {
  const mock = await startMockUpstream(Number(process.argv[2] ?? 0));
  process.stdout.write(
    `${JSON.stringify({ event: 'ready', listeners: { upstream: `127.0.0.1:${mock.port}` } })}\n`,
  );
  const stop = (): void => void mock.close().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
