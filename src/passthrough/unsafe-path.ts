// Path traversal (spec 3 §1 rule 8): a `.` or `..` segment, in any percent-encoding, with `/` or
// `\` (also encoded) as separators, and `;` parameters ignored (`..;x` is `..` to some servers).
// The upstream URL is built by joining strings; a dot segment would let a caller climb out of the
// target's base path once a URL parser or the upstream resolves it, so it is refused, not
// normalized.
import { decodeFully } from './percent-decode.ts';

export function isUnsafePath(path: string): boolean {
  // Fast path: no dot, no escape, no backslash cannot form a dot segment.
  if (path.indexOf('.') < 0 && path.indexOf('%') < 0 && path.indexOf('\\') < 0) return false;
  const decoded = decodeFully(path);
  if (decoded.includes('\0')) return true;
  let start = 0;
  for (let i = 0; i <= decoded.length; i++) {
    const c = i < decoded.length ? decoded.charCodeAt(i) : 47;
    if (c !== 47 && c !== 92) continue;
    let segment = decoded.slice(start, i);
    const semi = segment.indexOf(';');
    if (semi >= 0) segment = segment.slice(0, semi);
    if (segment === '.' || segment === '..') return true;
    start = i + 1;
  }
  return false;
}
