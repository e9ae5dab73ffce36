// A null OTLP/HTTP receiver for the observability benchmark: accepts `POST /v1/traces`, reads
// the body and throws it away (no parsing: the bench measures Tollgate's export cost, not a
// collector's), answers 200 with an empty protobuf body (an empty ExportTraceServiceResponse:
// everything accepted).
// `GET /stats` answers `{"requests":n,"bytes":m}` so the bench can check the exporter really
// shipped spans. Every request is bounded by the server's timeouts.
// Run as a script it listens on 127.0.0.1 (port from argv[2], default 0) and prints
// `{"event":"ready","listeners":{"collector":"127.0.0.1:PORT"}}` on stdout.

import http from 'node:http';
import type { AddressInfo } from 'node:net';

export const TRACES_PATH = '/v1/traces';
const OK = Buffer.alloc(0);
const OK_HEADERS = { 'content-type': 'application/x-protobuf', 'content-length': '0' };

export interface CollectorStats {
  /** Export requests received on TRACES_PATH and read to the end. */
  requests: number;
  /** Body bytes of those requests. */
  bytes: number;
}

export interface NullCollector {
  port: number;
  stats: CollectorStats;
  close(): Promise<void>;
}

/** Starts the receiver on 127.0.0.1:`port` (0 = any free port). */
export async function startNullCollector(port = 0): Promise<NullCollector> {
  const stats: CollectorStats = { requests: 0, bytes: 0 };
  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/stats') {
      req.resume();
      const body = JSON.stringify(stats);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) });
      res.end(body);
      return;
    }
    if (req.method !== 'POST' || req.url !== TRACES_PATH) {
      req.resume();
      res.writeHead(404, { 'content-length': '0' });
      res.end();
      return;
    }
    let bytes = 0;
    req.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
    });
    req.on('end', () => {
      stats.requests++;
      stats.bytes += bytes;
      res.writeHead(200, OK_HEADERS);
      res.end(OK);
    });
  });
  // A stalled exporter cannot hold a request open: it has 30 s to send a batch.
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    stats,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** GET /stats of a running collector; null when it does not answer within 2 s. */
export function fetchCollectorStats(addr: string): Promise<CollectorStats | null> {
  return new Promise((resolve) => {
    const req = http.get(`http://${addr}/stats`, { agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => {
        try {
          resolve(JSON.parse(text) as CollectorStats);
        } catch {
          resolve(null);
        }
      });
      res.on('error', () => resolve(null));
    });
    req.setTimeout(2000, () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(null));
  });
}

if (import.meta.main) {
  const c = await startNullCollector(Number(process.argv[2] ?? 0));
  process.stdout.write(`${JSON.stringify({ event: 'ready', listeners: { collector: `127.0.0.1:${c.port}` } })}\n`);
  const stop = (): void => void c.close().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
