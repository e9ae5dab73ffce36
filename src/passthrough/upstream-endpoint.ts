// Upstream endpoints of pass-through targets. A target_url is compiled once per snapshot; a
// preserve_host target is built per request from the matched host. Connection pools: the shared
// default pools of http/upstream.ts for plain targets, and one set per TLS setting (pooled per
// origin inside) for provider keys with their own trust settings, so a wildcard host cannot grow
// the set of pool sets.
import { compileEndpoint, upstreamPools, type UpstreamEndpoint } from '../http/upstream.ts';
import type { UpstreamTls } from './credentials.ts';
import { normalizeHost } from './host.ts';

/** The endpoint of a target_url (its path and query are kept by the caller, not here). */
export function targetUrlEndpoint(url: URL, tls: UpstreamTls | undefined): UpstreamEndpoint {
  const base = compileEndpoint(url.origin);
  if (tls === undefined || url.protocol !== 'https:') return base;
  return { ...base, pools: upstreamPools(tls) };
}

/** `https://<host>` for a preserve_host route; `host` is the normalized inbound host. */
export function preserveHostEndpoint(host: string, tls: UpstreamTls | undefined): UpstreamEndpoint {
  // The caller chose this text: only a host normalizeHost accepted may become an origin.
  if (host === '' || normalizeHost(host) !== host) throw new Error(`not a normalized host: ${JSON.stringify(host)}`);
  const hostname = host.startsWith('[') ? host.slice(1, -1) : host;
  return { origin: `https://${host}`, protocol: 'https:', hostname, port: 443, path: '/', pools: upstreamPools(tls) };
}
