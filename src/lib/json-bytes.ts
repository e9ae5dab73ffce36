// JSON text written as UTF-8 bytes straight into one reused buffer, for the OTLP span encoder:
// each constant piece (an attribute's key with its value's opening) is one copy of bytes made
// once, ASCII strings without escapes (ids, names, models: the common case) are copied character
// by character, and integers and whole microseconds in milliseconds are written without the
// engine's generic number formatting. Escapes, non-ASCII text and other numbers take
// JSON.stringify's own text, so the output is always what JSON.stringify writes for the value.
// For a span (~40 constant pieces) this costs about half the instructions of building the text
// as a string (bench/README.md); records with fewer pieces per value are cheaper as one template
// literal (see json-text.ts).

/** Constant JSON text as bytes (keys, punctuation), made once. */
export const jsonText = (text: string): Uint8Array => new Uint8Array(Buffer.from(text));

/** For each ASCII character: itself as a lowercase hex digit, or 0 when it is not a hex digit. */
const HEX_LOWER = new Uint8Array(0x80);
for (const c of '0123456789abcdef') HEX_LOWER[c.charCodeAt(0)] = c.charCodeAt(0);
for (const c of 'ABCDEF') HEX_LOWER[c.charCodeAt(0)] = c.toLowerCase().charCodeAt(0);

export class JsonBytes {
  /** `buf[0, at)` is the text written since the last reset; `buf` grows (and stays grown). */
  private buf: Buffer;
  private at = 0;

  constructor(initialBytes = 4096) {
    this.buf = Buffer.allocUnsafe(initialBytes);
  }

  reset(): void {
    this.at = 0;
  }

  /** The text written since the last reset: a view that the next write may overwrite. */
  view(): Buffer {
    return this.buf.subarray(0, this.at);
  }

  private room(n: number): void {
    if (this.at + n <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(2 * this.buf.length, this.at + n));
    this.buf.copy(grown, 0, 0, this.at);
    this.buf = grown;
  }

  /** Bytes as they are (constant text made by `jsonText`). One TypedArray#set: cheaper than a loop, even for short runs. */
  raw(b: Uint8Array): void {
    const n = b.length;
    if (this.at + n > this.buf.length) this.room(n);
    this.buf.set(b, this.at);
    this.at += n;
  }

  /** Text known to be ASCII that JSON needs no escape for (digits, hex), unquoted. */
  ascii(s: string): void {
    const n = s.length;
    this.room(n);
    const o = this.buf;
    const p = this.at;
    for (let i = 0; i < n; i++) o[p + i] = s.charCodeAt(i);
    this.at = p + n;
  }

  /**
   * A UUID's 32 hex digits, lowercased, without its dashes (an OTLP trace id); false, with nothing
   * written, when `s` is not a UUID.
   */
  uuidHex(s: string): boolean {
    if (s.length !== 36 || s.charCodeAt(8) !== 0x2d || s.charCodeAt(13) !== 0x2d || s.charCodeAt(18) !== 0x2d || s.charCodeAt(23) !== 0x2d) return false;
    this.room(32);
    const at = this.at;
    if (!this.hexRun(s, 0, 8, at) || !this.hexRun(s, 9, 13, at + 8) || !this.hexRun(s, 14, 18, at + 12) || !this.hexRun(s, 19, 23, at + 16) || !this.hexRun(s, 24, 36, at + 20)) {
      return false;
    }
    this.at = at + 32;
    return true;
  }

  /**
   * `s[from, to)` as lowercase hex digits at `p`; false at the first character that is not one.
   * One table read and one branch that always goes the same way per character: random hex digits
   * make "is it a digit or a letter" a branch the processor mispredicts half the time.
   */
  private hexRun(s: string, from: number, to: number, p: number): boolean {
    const o = this.buf;
    for (let i = from; i < to; i++) {
      const c = s.charCodeAt(i);
      const h = c < 0x80 ? HEX_LOWER[c] : 0;
      if (h === 0) return false;
      o[p++] = h;
    }
    return true;
  }

  /** `s` as a JSON string literal. */
  str(s: string): void {
    const n = s.length;
    this.room(n + 2);
    const o = this.buf;
    const p = this.at + 1;
    o[this.at] = 0x22;
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c < 0x20 || c === 0x22 || c === 0x5c || c >= 0x7f) {
        this.text(JSON.stringify(s));
        return;
      }
      o[p + i] = c;
    }
    o[p + n] = 0x22;
    this.at = p + n + 1;
  }

  /** `v` as a JSON number (`null` when it is not finite, as JSON.stringify writes it). */
  num(v: number): void {
    if (Number.isSafeInteger(v)) {
      this.int(v);
      return;
    }
    // Whole microseconds in milliseconds (the records' durations): the shortest form that reads
    // back as v has at most three decimals, written here without the generic formatting.
    const k = Math.round(v * 1000);
    if (k / 1000 === v && k > -1e15 && k < 1e15) {
      // The integer k, then its last three digits moved behind a decimal point (trailing zeros dropped).
      const a = k < 0 ? -k : k;
      this.room(24);
      if (k < 0) this.buf[this.at++] = 0x2d;
      this.int(Math.floor(a / 1000));
      const frac = a % 1000;
      const o = this.buf;
      let p = this.at;
      o[p++] = 0x2e; // .
      o[p++] = 0x30 + Math.floor(frac / 100);
      if (frac % 100 !== 0) {
        o[p++] = 0x30 + (Math.floor(frac / 10) % 10);
        if (frac % 10 !== 0) o[p++] = 0x30 + (frac % 10);
      }
      this.at = p;
      return;
    }
    this.ascii(Number.isFinite(v) ? String(v) : 'null');
  }

  /** JSON text already made (any Unicode), UTF-8 encoded. */
  private text(t: string): void {
    this.room(t.length * 3);
    this.at += this.buf.write(t, this.at, 'utf8');
  }

  /**
   * A safe integer in decimal, digit by digit: the engine formats an integer as large as a span's
   * time (microseconds since the epoch) with its shortest-form algorithm for doubles. Above 1e8
   * it is written as two parts below 2^31, whose digits take integer arithmetic.
   */
  private int(v: number): void {
    this.room(17);
    let n = v;
    if (n < 0) {
      this.buf[this.at++] = 0x2d;
      n = -n;
    }
    if (n < 1e8) {
      this.small(n);
      return;
    }
    const high = Math.floor(n / 1e8);
    this.small(high);
    // The low eight digits, zeros included.
    const o = this.buf;
    let low = n - high * 1e8;
    for (let i = this.at + 7; i >= this.at; i--) {
      const q = (low / 10) | 0;
      o[i] = 0x30 + low - q * 10;
      low = q;
    }
    this.at += 8;
  }

  /** An integer in [0, 2^31) in decimal. */
  private small(v: number): void {
    const o = this.buf;
    let n = v | 0;
    let digits = 1;
    for (let t = n; t >= 10; t = (t / 10) | 0) digits++;
    let i = this.at + digits;
    this.at = i;
    do {
      const q = (n / 10) | 0;
      o[--i] = 0x30 + n - q * 10;
      n = q;
    } while (n > 0);
  }
}
