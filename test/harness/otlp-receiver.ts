// A small local OTLP/HTTP receiver for tests: records every request (headers and its body, a
// protobuf ExportTraceServiceRequest decoded into OTLP/HTTP JSON's shape by otlp-proto.ts) and
// answers from a queue of scripted statuses (then 200). Listens on 127.0.0.1:0.
// Also a collector that accepts connections and never answers.
import http from 'node:http';
import net, { type AddressInfo, type Socket } from 'node:net';
import { decodeExportRequest } from './otlp-proto.ts';

export interface ReceivedExport {
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The ExportTraceServiceRequest in OTLP/HTTP JSON's shape; undefined when it did not decode. */
  body: any;
  /** The body as it arrived. */
  raw: Buffer;
  /** The status the receiver answered with. */
  status: number;
}

export interface OtlpReceiver {
  /** http://127.0.0.1:<port>/v1/traces */
  url: string;
  received: ReceivedExport[];
  /** Queue statuses for the next requests (each request takes one; afterwards 200). */
  script(...statuses: Array<number | { status: number; headers?: Record<string, string> }>): void;
  /** Every span received with a 2xx answer, flattened. */
  acceptedSpans(): any[];
  /** Resolve once `n` requests arrived (reject after timeoutMs, default 10 s). */
  waitForRequests(n: number, timeoutMs?: number): Promise<void>;
  reset(): void;
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const received: ReceivedExport[] = [];
  let queue: Array<{ status: number; headers?: Record<string, string> }> = [];
  const waiters: Array<() => void> = [];
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const next = queue.shift() ?? { status: 200 };
      const raw = Buffer.concat(chunks);
      let body: unknown;
      try {
        body = decodeExportRequest(raw);
      } catch {
        body = undefined;
      }
      received.push({ path: req.url ?? '/', headers: req.headers, body, raw, status: next.status });
      // An empty ExportTraceServiceResponse, or a google.rpc.Status whose message is "scripted".
      const answer = next.status < 300 ? Buffer.alloc(0) : Buffer.from([0x08, 0x03, 0x12, 0x08, ...Buffer.from('scripted')]);
      res.writeHead(next.status, { 'content-type': 'application/x-protobuf', ...next.headers }).end(answer);
      for (const w of waiters.splice(0)) w();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    received,
    script(...statuses) {
      queue.push(...statuses.map((s) => (typeof s === 'number' ? { status: s } : s)));
    },
    acceptedSpans() {
      return received
        .filter((r) => r.status >= 200 && r.status < 300)
        .flatMap((r) => r.body?.resourceSpans ?? [])
        .flatMap((rs: any) => rs.scopeSpans ?? [])
        .flatMap((ss: any) => ss.spans ?? []);
    },
    async waitForRequests(n, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (received.length < n) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`otlp receiver: ${received.length} of ${n} requests after ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, left);
          waiters.push(() => {
            clearTimeout(t);
            resolve();
          });
        });
      }
    },
    reset() {
      received.length = 0;
      queue = [];
    },
    close() {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** The value of attribute `key` of an OTLP span (in OTLP/HTTP JSON's shape), or undefined. */
export const attr = (span: any, key: string): any => span.attributes.find((a: any) => a.key === key)?.value;

/** Poll `probe` every 50 ms until it returns a value (exports arrive in batches). */
export async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface SilentCollector {
  /** http://127.0.0.1:<port>/v1/traces */
  url: string;
  /** Connections accepted so far. */
  accepted(): number;
  /** Connections still open. */
  open(): number;
  close(): Promise<void>;
}

/** A TCP server that accepts connections, reads what it is sent and never answers. */
export async function startSilentCollector(): Promise<SilentCollector> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server = net.createServer((s) => {
    accepted++;
    sockets.add(s);
    s.resume();
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    accepted: () => accepted,
    open: () => sockets.size,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
