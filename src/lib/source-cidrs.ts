// A client source allowlist (a pass-through route's source_cidrs, a model's allowed_cidrs), parsed
// once per snapshot. The client address is the one proxy.real_ip resolved; one that cannot be
// parsed is outside every list (fail closed).
import ipaddr from 'ipaddr.js';

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

export interface SourceCidrs {
  readonly ranges: readonly Range[];
}

/**
 * True for an IPv4/IPv6 address or CIDR (e.g. `10.0.0.0/8`, `::1`, `fd00::/8`). IPv4 must be four
 * dotted decimal parts without leading zeros: the other forms a parser takes (`10.1`, `167772161`,
 * `0x0a.0.0.1`, octal `010.0.0.1`) name another network than the one a reader sees.
 */
export function isIpOrCidr(value: string): boolean {
  if (value.includes('/')) {
    return ipaddr.IPv4.isValidCIDRFourPartDecimal(value) || ipaddr.IPv6.isValidCIDR(value);
  }
  return ipaddr.IPv4.isValidFourPartDecimal(value) || ipaddr.IPv6.isValid(value);
}

export function compileSourceCidrs(list: readonly string[]): SourceCidrs {
  const ranges: Range[] = [];
  for (const entry of list) {
    if (!isIpOrCidr(entry)) continue;
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
