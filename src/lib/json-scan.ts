// Cheap scanning of JSON text without parsing it: find a top-level member's value span.
// Used on the streaming hot path to rewrite `model` and spot `usage` in SSE frames without a
// parse/serialise round-trip per chunk.

export interface Span {
  /** Index of the value's first character. */
  start: number;
  /** Index just past the value's last character. */
  end: number;
}

/** JSON whitespace (also what SSE lines and HTTP bodies are padded with): space, tab, LF, CR. */
export const isJsonSpace = (c: number): boolean => c === 32 || c === 10 || c === 13 || c === 9;

function skipWs(s: string, i: number): number {
  while (isJsonSpace(s.charCodeAt(i))) i++;
  return i;
}

function skipString(s: string, i: number): number {
  // s[i] is the opening quote; returns the index after the closing quote, or -1. The next quote
  // is found by the engine's native search (answers are mostly the text of long strings); it
  // closes the string unless an odd run of backslashes escapes it.
  let from = i + 1;
  for (;;) {
    const q = s.indexOf('"', from);
    if (q < 0) return -1;
    let k = q - 1;
    while (k > i && s.charCodeAt(k) === 92) k--;
    if (((q - 1 - k) & 1) === 0) return q + 1;
    from = q + 1;
  }
}

function skipValue(s: string, i: number): number {
  const c = s.charCodeAt(i);
  if (c === 34) return skipString(s, i);
  if (c === 123 || c === 91) {
    let depth = 0;
    for (let j = i; j < s.length; j++) {
      const d = s.charCodeAt(j);
      if (d === 34) {
        j = skipString(s, j) - 1;
        if (j < 0) return -1;
      } else if (d === 123 || d === 91) depth++;
      else if (d === 125 || d === 93) {
        depth--;
        if (depth === 0) return j + 1;
      }
    }
    return -1;
  }
  let j = i;
  while (j < s.length) {
    const d = s.charCodeAt(j);
    if (d === 44 || d === 125 || d === 93 || d === 32 || d === 10 || d === 13 || d === 9) break;
    j++;
  }
  return j > i ? j : -1;
}

/**
 * Span of the value of member `key` of the top-level object in `s` starting at `from`,
 * or undefined when absent or the text is not a well-formed object up to that member.
 */
export function findTopLevelMember(s: string, key: string, from = 0): Span | undefined {
  let i = skipWs(s, from);
  if (s.charCodeAt(i) !== 123) return undefined;
  i++;
  for (;;) {
    i = skipWs(s, i);
    if (s.charCodeAt(i) !== 34) return undefined;
    const keyEnd = skipString(s, i);
    if (keyEnd < 0) return undefined;
    const isKey = keyEnd - i - 2 === key.length && s.startsWith(key, i + 1);
    i = skipWs(s, keyEnd);
    if (s.charCodeAt(i) !== 58) return undefined;
    i = skipWs(s, i + 1);
    const end = skipValue(s, i);
    if (end < 0) return undefined;
    if (isKey) return { start: i, end };
    i = skipWs(s, end);
    const c = s.charCodeAt(i);
    if (c === 44) {
      i++;
      continue;
    }
    return undefined;
  }
}

/**
 * Every member of the top-level object in `s`, read the way JSON.parse reads it: a key given twice
 * is its last value, and escaped keys (`"mod\\u0065l"`) are decoded. Members up to the first
 * malformed one; empty when `s` is not an object. For request bodies, where the gateway must
 * see the member the upstream will see.
 */
export function topLevelMembers(s: string): Map<string, Span> {
  const members = new Map<string, Span>();
  let i = skipWs(s, 0);
  if (s.charCodeAt(i) !== 123) return members;
  i++;
  for (;;) {
    i = skipWs(s, i);
    if (s.charCodeAt(i) !== 34) return members;
    const keyEnd = skipString(s, i);
    if (keyEnd < 0) return members;
    let key = s.slice(i + 1, keyEnd - 1);
    if (key.includes('\\')) {
      try {
        key = JSON.parse(s.slice(i, keyEnd)) as string;
      } catch {
        return members;
      }
    }
    i = skipWs(s, keyEnd);
    if (s.charCodeAt(i) !== 58) return members;
    i = skipWs(s, i + 1);
    const end = skipValue(s, i);
    if (end < 0) return members;
    members.set(key, { start: i, end });
    i = skipWs(s, end);
    if (s.charCodeAt(i) !== 44) return members;
    i++;
  }
}

/** Replace the top-level string member `key` with `value` (JSON-encoded); unchanged when absent. */
export function replaceTopLevelString(s: string, key: string, value: string, from = 0): string {
  const span = findTopLevelMember(s, key, from);
  if (span === undefined || s.charCodeAt(span.start) !== 34) return s;
  return s.slice(0, span.start) + JSON.stringify(value) + s.slice(span.end);
}
