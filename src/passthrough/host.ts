// The inbound host a request is matched by: lowercase, the port dropped (only an all-digit
// suffix, so an IPv6 literal keeps its colons), a trailing root dot trimmed.

export function normalizeHost(raw: string | undefined): string {
  if (raw === undefined || raw === '') return '';
  let host = raw.trim().toLowerCase();
  if (host.startsWith('[')) {
    const close = host.indexOf(']');
    return close < 0 ? host : host.slice(0, close + 1);
  }
  const colon = host.lastIndexOf(':');
  if (colon >= 0 && host.indexOf(':') === colon && isDigits(host, colon + 1)) host = host.slice(0, colon);
  while (host.endsWith('.')) host = host.slice(0, -1);
  return host;
}

function isDigits(s: string, from: number): boolean {
  if (from >= s.length) return true; // "host:" has an empty port
  for (let i = from; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** The suffix a `*.` wildcard is stored under: everything after the first label ('' if none). */
export function wildcardKey(host: string): string {
  const dot = host.indexOf('.');
  return dot <= 0 ? '' : host.slice(dot + 1);
}
