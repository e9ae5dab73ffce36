// A client source allowlist (a pass-through route's source_cidrs, a model's allowed_cidrs), parsed
// once per snapshot. The client address is the one proxy.real_ip resolved; one that cannot be
// parsed is outside every list (fail closed).
import ipaddr from 'ipaddr.js';

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

export interface SourceCidrs {
  readonly ranges: readonly Range[];
}

export function compileSourceCidrs(list: readonly string[]): SourceCidrs {
  const ranges: Range[] = [];
  for (const entry of list) {
    try {
      if (entry.includes('/')) {
        const [addr, bits] = ipaddr.parseCIDR(entry);
        // An IPv4-mapped range is matched as the IPv4 range it stands for.
        if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
          ranges.push([(addr as ipaddr.IPv6).toIPv4Address(), bits - 96]);
        } else {
          ranges.push([addr, bits]);
        }
      } else {
        const addr = ipaddr.process(entry);
        ranges.push([addr, addr.kind() === 'ipv4' ? 32 : 128]);
      }
    } catch {
      // Validated at load; a bad entry admits nobody.
    }
  }
  return { ranges };
}

export function sourceAllowed(cidrs: SourceCidrs, ip: string): boolean {
  if (!ipaddr.isValid(ip)) return false;
  const addr = ipaddr.process(ip);
  for (const [range, bits] of cidrs.ranges) {
    if (addr.kind() === range.kind() && addr.match(range, bits)) return true;
  }
  return false;
}
