// Percent-decoding for safety checks: decode repeatedly (a double-encoded `%252e` is still a
// dot to a server that decodes twice), tolerating malformed sequences, which stay as written.

const MAX_ROUNDS = 4;

function decodeBytes(s: string): string {
  // Byte-wise fallback for text decodeURIComponent rejects (invalid UTF-8 or a stray '%').
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 37 && i + 2 < s.length && isHex(s.charCodeAt(i + 1)) && isHex(s.charCodeAt(i + 2))) {
      out += String.fromCharCode(parseInt(s.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

function isHex(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
}

/** `s` with every percent-encoding layer removed (bounded). `plus` also reads `+` as a space (queries). */
export function decodeFully(s: string, plus = false): string {
  let cur = plus ? s.replaceAll('+', ' ') : s;
  for (let round = 0; round < MAX_ROUNDS && cur.includes('%'); round++) {
    let next: string;
    try {
      next = decodeURIComponent(cur);
    } catch {
      next = decodeBytes(cur);
    }
    if (next === cur) break;
    cur = next;
  }
  return cur;
}
