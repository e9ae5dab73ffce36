// Listen-address syntax for the bootstrap config: the `host-port` format of the schema. IP
// literals are checked with ipaddr.js in their strict forms (four-part dotted decimal for IPv4),
// so "127.1" or "0x7f.0.0.1" are refused (the `ip-or-cidr` format: lib/source-cidrs.ts).

import ipaddr from 'ipaddr.js';

const PORT = /^\d{1,5}$/;
/** RFC 1123 hostname: dot-separated labels of letters, digits and inner hyphens. */
const HOSTNAME = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/i;
const DOTTED_NUMERIC = /^[\d.]+$/;

/**
 * Whether `s` is a usable Redis URL: redis:// or rediss://, a host, an optional port, an optional
 * database path (/0 to /15). A password with `/`, `?`, `#` or `@` must be percent-encoded.
 */
export function isRedisUrl(s: string): boolean {
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    return false;
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') return false;
  if (u.hostname === '' || u.search !== '' || u.hash !== '') return false;
  return u.pathname === '' || u.pathname === '/' || /^\/(\d|1[0-5])$/.test(u.pathname);
}

/**
 * Parse `host:port`. host is an IPv4 literal, a bracketed IPv6 literal (`[::1]`, returned
 * without brackets) or a hostname; port is 0-65535 (0 = pick a free port).
 * Throws an Error whose message shows the bad value and what was expected.
 */
export function parseAddr(addr: string): { host: string; port: number } {
  const fail = (why: string): never => {
    // What precedes an `@` is credentials (`user:password@host:port`): never shown.
    const shown = typeof addr === 'string' && addr.includes('@') ? `…${addr.slice(addr.lastIndexOf('@'))}` : addr;
    throw new Error(`invalid address ${JSON.stringify(shown)} (${why})`);
  };
  if (typeof addr !== 'string') fail('expected host:port');
  if (addr.includes('://')) fail('expected host:port, not a URL');
  const colon = addr.lastIndexOf(':');
  if (colon <= 0) fail('expected host:port');
  const rawHost = addr.slice(0, colon);
  const rawPort = addr.slice(colon + 1);
  if (!PORT.test(rawPort)) fail('expected host:port');
  const port = Number(rawPort);
  if (port > 65535) fail('port must be 0-65535');

  if (rawHost.startsWith('[')) {
    if (!rawHost.endsWith(']')) fail('expected host:port');
    const host = rawHost.slice(1, -1);
    if (!ipaddr.IPv6.isValid(host)) fail('invalid IPv6 literal');
    return { host, port };
  }
  if (rawHost.includes(':')) {
    fail(ipaddr.IPv6.isValid(rawHost) ? 'IPv6 literals must be bracketed, e.g. [::1]:3000' : 'invalid host');
  }
  if (DOTTED_NUMERIC.test(rawHost)) {
    if (!ipaddr.IPv4.isValidFourPartDecimal(rawHost)) fail('invalid IPv4 literal');
    return { host: rawHost, port };
  }
  if (!HOSTNAME.test(rawHost)) fail('invalid host');
  return { host: rawHost, port };
}

