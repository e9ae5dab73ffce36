// Upstream response headers relayed to the caller: every header as the upstream sent it (repeated
// ones such as Set-Cookie kept), minus hop-by-hop headers and any the upstream's Connection
// header names, minus the gateway's x-tollgate-* namespace (the gateway sets its request id).
import { REQUEST_ID_HEADER } from '../http/request-id.ts';
import { GATEWAY_NAMESPACE } from '../lib/header-rules.ts';

const HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'proxy-authenticate',
]);

export interface ResponseHeaderOptions {
  /** Drop the upstream content-length (event streams; bodies the gateway re-frames). */
  dropContentLength: boolean;
  /** A content-length to send instead (buffered bodies). */
  contentLength?: number;
}

/** Flat `[name, value, name, value, ...]` list for `res.writeHead`. */
export function relayedResponseHeaders(rawHeaders: readonly string[], requestId: string, options: ResponseHeaderOptions): string[] {
  let connection: Set<string> | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i].toLowerCase() !== 'connection') continue;
    for (const t of rawHeaders[i + 1].split(',')) (connection ??= new Set()).add(t.trim().toLowerCase());
  }
  const out: string[] = [];
  const dropLength = options.dropContentLength || options.contentLength !== undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i];
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || lower.startsWith(GATEWAY_NAMESPACE) || connection?.has(lower) === true) continue;
    if (dropLength && lower === 'content-length') continue;
    out.push(name, rawHeaders[i + 1]);
  }
  if (options.contentLength !== undefined) out.push('content-length', String(options.contentLength));
  out.push(REQUEST_ID_HEADER, requestId);
  return out;
}
