// Pass-through test helpers: an echo reply for the scriptable mock upstream (the caller sees the
// method, URL, headers and body the upstream received), a raw HTTP client that sends request
// targets byte for byte (dot segments, absolute-form proxy requests, any Host), a TLS echo
// server for https targets, and the usage line of a request read from the gateway's stderr.
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Gateway } from './spawn.ts';
import { waitForLines } from './log-lines.ts';
import type { RecordedRequest, Reply } from './mock-upstream.ts';

/** A mock-upstream script answering with what it received. */
export function echoReply(req: RecordedRequest): Reply {
  return { json: { method: req.method, url: req.url, headers: req.headers, body: req.body } };
}

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  rawHeaders: string[];
  body: Buffer;
  text: string;
}

export interface RawRequest {
  method?: string;
  /** Sent exactly as given: `/a/../b`, `/x?y`, or an absolute-form `http://host/path`. */
  path: string;
  headers?: Record<string, string | string[]>;
  body?: string | Buffer;
  /** Send the body with chunked transfer encoding (no content-length). */
  chunked?: boolean;
  /** Abort after this many ms without a full response (default 10 s). */
  timeoutMs?: number;
}

/** One request to `baseUrl` (http://host:port) without any URL normalization. */
export function rawRequest(baseUrl: string, r: RawRequest): Promise<RawResponse> {
  const u = new URL(baseUrl);
  const headers = { ...r.headers };
  // Node frames a GET/DELETE body only with an explicit length.
  if (r.chunked === true) headers['transfer-encoding'] = 'chunked';
  else if (r.body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-length')) {
    headers['content-length'] = String(Buffer.byteLength(r.body));
  }
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: u.hostname,
      port: Number(u.port),
      method: r.method ?? 'GET',
      path: r.path,
      headers,
      agent: false,
      timeout: r.timeoutMs ?? 10_000,
    });
    req.once('timeout', () => req.destroy(new Error(`rawRequest ${r.path}: no response within ${r.timeoutMs ?? 10_000} ms`)));
    req.once('error', reject);
    req.once('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.once('error', reject);
      res.once('end', () => {
        const body = Buffer.concat(parts);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, rawHeaders: res.rawHeaders, body, text: body.toString('utf8') });
      });
    });
    req.end(r.body);
  });
}

/** The usage event of one request (by its x-tollgate-request-id), polled from stderr. */
export async function usageOf(gw: Gateway, requestId: string | null, timeoutMs = 3000): Promise<any> {
  if (requestId === null) throw new Error('the response has no x-tollgate-request-id');
  const [line] = await waitForLines(gw, 'usage', (l) => l.request_id === requestId, 1, timeoutMs);
  if (line === undefined) throw new Error(`no usage line for request ${requestId} within ${timeoutMs} ms`);
  return line;
}

/** Every usage line of one request (to check there is exactly one). */
export async function usageLinesOf(gw: Gateway, requestId: string, settleMs = 600): Promise<any[]> {
  await new Promise((r) => setTimeout(r, settleMs));
  return waitForLines(gw, 'usage', (l) => l.request_id === requestId, 1, 0);
}

export interface ByteRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

export interface ByteRecorder {
  url: string;
  requests: ByteRequest[];
  close(): Promise<void>;
}

/** An upstream that keeps request bodies as bytes and answers 200 `{"bytes":<length>}`. */
export async function startByteRecorder(): Promise<ByteRecorder> {
  const requests: ByteRequest[] = [];
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const body = Buffer.concat(parts);
      requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      const payload = JSON.stringify({ bytes: body.length });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
      res.end(payload);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

/** Self-signed certificate for `localhost` (valid 2000-2100); trust it with a provider key's tls.ca_cert. */
export const LOCALHOST_CERT = `-----BEGIN CERTIFICATE-----
MIIBYDCCAQegAwIBAgIBATAKBggqhkjOPQQDAjAUMRIwEAYDVQQDDAlsb2NhbGhv
c3QwIBcNMDAwMTAxMDAwMDAwWhgPMjEwMDAxMDEwMDAwMDBaMBQxEjAQBgNVBAMM
CWxvY2FsaG9zdDBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABHpCjdX/yuDxhbAA
R0m03+5vit2ZR1lh0ddm2rRzN/aF19/3coQjZl6z1x76QUcpEFjSDdZyNKkD9GgE
63Tae2ijSDBGMA8GA1UdEwEB/wQFMAMBAf8wFAYDVR0RBA0wC4IJbG9jYWxob3N0
MB0GA1UdDgQWBBR2s9Zt97ooousJZpLmLquDNpYskjAKBggqhkjOPQQDAgNHADBE
AiBDX35rmURkZ1seXUQcNeZ0aoy4ZbR+7Zrq4q8hQX0pDwIgDtYCQeLevSls68uG
aKwVSLAMdhCuStzFofxXamjWXbg=
-----END CERTIFICATE-----
`;
export const LOCALHOST_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg9iFqL4CdoUuND6YY
TeF4d0eUl5bsB4MttF10e234vyWhRANCAAR6Qo3V/8rg8YWwAEdJtN/ub4rdmUdZ
YdHXZtq0czf2hdff93KEI2Zes9ce+kFHKRBY0g3WcjSpA/RoBOt02nto
-----END PRIVATE KEY-----
`;

export interface TlsEcho {
  port: number;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

/**
 * An https server for `localhost` on `port` (0 = any free port) answering with what it received,
 * or with `reply(request)` as JSON when given.
 */
export async function startTlsEcho(port: number, reply?: (req: RecordedRequest) => unknown): Promise<TlsEcho> {
  const requests: RecordedRequest[] = [];
  const server = https.createServer({ cert: LOCALHOST_CERT, key: LOCALHOST_KEY }, (req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const rec: RecordedRequest = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(parts).toString('utf8'), remotePort: req.socket.remotePort };
      requests.push(rec);
      const payload = JSON.stringify(reply !== undefined ? reply(rec) : echoReply(rec).json);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
      res.end(payload);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host: '127.0.0.1' }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    requests,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
