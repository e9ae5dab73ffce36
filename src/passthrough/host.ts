// The inbound host a request is matched by: lowercase, the port dropped, a trailing root dot
// trimmed — or '' when the value is not a host at all. Only a DNS name (labels of letters,
// digits and hyphens) or a bracketed IPv6 literal, with an optional all-digit port, is a host:
// the value is matched as text here but becomes `https://<host>` for a preserve_host route,
// and a URL parser decodes `%2e`, reads `@` as userinfo, cuts at `/?#`... so `a%2eb.example.com`
// would pass a one-label `*.example.com` check as text and then reach `a.b.example.com`.
import { isIPv6 } from 'node:net';

export function normalizeHost(raw: string | undefined): string {
  if (raw === undefined || raw === '') return '';
  const host = raw.trim().toLowerCase();
  if (host.startsWith('[')) {
    const close = host.indexOf(']');
    if (close < 0 || !isPort(host, close + 1)) return '';
    // A zone id (`%25eth0`) is not a host a request can name upstream.
    const inner = host.slice(1, close);
    return inner.includes('%') || !isIPv6(inner) ? '' : host.slice(0, close + 1);
  }
  const colon = host.indexOf(':');
  let name = host;
  if (colon >= 0) {
    if (!isPort(host, colon)) return '';
    name = host.slice(0, colon);
  }
  if (name.endsWith('.')) name = name.slice(0, -1);
  return isDnsName(name) ? name : '';
}

/** `s` from `from` is empty or `:` followed by digits only ("host:" has an empty port). */
function isPort(s: string, from: number): boolean {
  if (from === s.length) return true;
  if (s.charCodeAt(from) !== 58) return false;
  for (let i = from + 1; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** Non-empty dot-separated labels of `a-z`, `0-9` and `-` (the input is lowercased). */
function isDnsName(s: string): boolean {
  if (s === '') return false;
  let labelStart = 0;
  for (let i = 0; i <= s.length; i++) {
    const c = i < s.length ? s.charCodeAt(i) : 46;
    if (c === 46) {
      if (i === labelStart) return false;
      labelStart = i + 1;
    } else if (!((c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 45)) {
      return false;
    }
  }
  return true;
}

/** The suffix a `*.` wildcard is stored under: everything after the first label ('' if none). */
export function wildcardKey(host: string): string {
  const dot = host.indexOf('.');
  return dot <= 0 ? '' : host.slice(dot + 1);
}
