// Baseline (b): the least a Node reverse proxy can do. node:http server, node:http keep-alive
// Agent to one upstream, request and response piped, no parsing. Tollgate's throughput bar is
// a fraction of this. Usage: minimal-proxy.ts http://127.0.0.1:UPSTREAM_PORT [listen port]
// Prints `{"event":"ready","listeners":{"proxy":"127.0.0.1:PORT"}}` on stdout when listening.

import http from 'node:http';
import type { AddressInfo } from 'node:net';

const upstream = new URL(process.argv[2] ?? 'http://127.0.0.1:1');
const agent = new http.Agent({ keepAlive: true });

const server = http.createServer((req, res) => {
  const up = http.request(
    {
      host: upstream.hostname,
      port: upstream.port,
      method: req.method,
      path: req.url,
      headers: { ...req.headers, host: upstream.host },
      agent,
    },
    (upRes) => {
      res.writeHead(upRes.statusCode ?? 502, upRes.headers);
      upRes.pipe(res);
    },
  );
  up.on('error', () => {
    if (!res.headersSent) res.writeHead(502, { 'content-length': '0' });
    res.end();
  });
  req.pipe(up);
});

server.listen(Number(process.argv[3] ?? 0), '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ event: 'ready', listeners: { proxy: `127.0.0.1:${port}` } })}\n`);
});
process.on('SIGTERM', () => process.exit(0));
