// Client IP resolution behind trusted proxies (nginx real_ip semantics).
import ipaddr from 'ipaddr.js';

export interface RealIpOptions {
  header: string;
  trusted_proxies: string[];
  recursive: boolean;
}

type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

export type ClientIpResolver = (peer: string | undefined, headerValue: string | string[] | undefined) => string;

function normalize(ip: string): string {
  if (!ipaddr.isValid(ip)) return ip;
  const parsed = ipaddr.parse(ip);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) {
    return (parsed as ipaddr.IPv6).toIPv4Address().toString();
  }
  return parsed.toString();
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
      .map(normalize);
    if (hops.length === 0) return peer;
    if (!options.recursive) return hops[hops.length - 1];
    for (let i = hops.length - 1; i >= 0; i--) {
      if (!isTrusted(hops[i])) return hops[i];
    }
    return hops[0];
  };
}
