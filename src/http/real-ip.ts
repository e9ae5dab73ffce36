// Client IP resolution behind trusted proxies (nginx real_ip semantics). The header is read from
// the right, the side the trusted proxies wrote: an entry that is not an address (`unknown`, a
// typo) ends the walk there, keeping the address reached so far, so nothing the client wrote
// further left can stand in for it. An `ip:port` entry (some load balancers add the port) is its
// address.
import ipaddr from 'ipaddr.js';

export interface RealIpOptions {
  header: string;
  trusted_proxies: string[];
  recursive: boolean;
}

type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

export type ClientIpResolver = (peer: string | undefined, headerValue: string | string[] | undefined) => string;

/** IPv4-mapped IPv6 (`::ffff:1.2.3.4`) reads as plain IPv4; anything else is kept as given. */
function normalize(ip: string): string {
  if (ip.length > 7 && ip.charCodeAt(0) === 58 && ip.startsWith('::ffff:') && ip.includes('.')) return ip.slice(7);
  return ip;
}

function parseCidr(entry: string): Cidr {
  if (entry.includes('/')) return ipaddr.parseCIDR(entry);
  const addr = ipaddr.parse(entry);
  return [addr, addr.kind() === 'ipv4' ? 32 : 128];
}

/** The address of one header entry (`ip`, `ip:port`, `[ipv6]`, `[ipv6]:port`), or undefined. */
function entryAddress(entry: string): string | undefined {
  let ip = entry;
  if (ip.charCodeAt(0) === 91) {
    const close = ip.indexOf(']');
    if (close < 0 || (close + 1 < ip.length && !/^:\d{1,5}$/.test(ip.slice(close + 1)))) return undefined;
    ip = ip.slice(1, close);
  } else {
    const colon = ip.indexOf(':');
    // One colon: IPv4 with a port. More: a bare IPv6 address.
    if (colon >= 0 && colon === ip.lastIndexOf(':')) {
      if (!/^\d{1,5}$/.test(ip.slice(colon + 1))) return undefined;
      ip = ip.slice(0, colon);
    }
  }
  return ipaddr.isValid(ip) ? ipaddr.process(ip).toString() : undefined;
}

export function createClientIpResolver(options: RealIpOptions): ClientIpResolver {
  const trusted = options.trusted_proxies.map(parseCidr);
  const isTrusted = (ip: string): boolean => {
    if (trusted.length === 0 || !ipaddr.isValid(ip)) return false;
    const parsed = ipaddr.process(ip);
    return trusted.some(([range, bits]) => parsed.kind() === range.kind() && parsed.match(range, bits));
  };
  return (peerRaw, headerValue) => {
    const peer = normalize(peerRaw ?? 'unknown');
    if (trusted.length === 0 || headerValue === undefined || !isTrusted(peer)) return peer;
    const joined = Array.isArray(headerValue) ? headerValue.join(',') : headerValue;
    const hops = joined
      .split(',')
      .map((h) => h.trim())
      .filter((h) => h.length > 0);
    let client = peer;
    for (let i = hops.length - 1; i >= 0; i--) {
      const ip = entryAddress(hops[i]);
      if (ip === undefined) return client;
      client = ip;
      if (!options.recursive || !isTrusted(ip)) return ip;
    }
    return client;
  };
}
