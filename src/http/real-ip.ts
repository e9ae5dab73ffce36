// Client IP resolution behind trusted proxies (nginx real_ip semantics).
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
      .filter((h) => h.length > 0 && ipaddr.isValid(h))
      .map((h) => ipaddr.process(h).toString());
    if (hops.length === 0) return peer;
    if (!options.recursive) return hops[hops.length - 1];
    for (let i = hops.length - 1; i >= 0; i--) {
      if (!isTrusted(hops[i])) return hops[i];
    }
    return hops[0];
  };
}
