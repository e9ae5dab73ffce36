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
    if (s.length !== 36) return false;
    this.room(32);
    const o = this.buf;
    let p = this.at;
    for (let i = 0; i < 36; i++) {
      const c = s.charCodeAt(i);
      if (i === 8 || i === 13 || i === 18 || i === 23) {
        if (c !== 0x2d) return false;
      } else if ((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66)) {
        o[p++] = c;
      } else if (c >= 0x41 && c <= 0x46) {
        o[p++] = c + 0x20;
      } else {
        return false;
      }
    }
    this.at = p;
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
   * time (microseconds since the epoch) with its shortest-form algorithm for doubles.
   */
  private int(v: number): void {
    this.room(17);
    const o = this.buf;
    let n = v;
    if (n < 0) {
      o[this.at++] = 0x2d;
      n = -n;
    }
    if (n < 10) {
      o[this.at++] = 0x30 + n;
      return;
    }
    let digits = 1;
    for (let t = n; t >= 10; t = Math.floor(t / 10)) digits++;
    let i = this.at + digits;
    this.at = i;
    while (n >= 10) {
      const q = Math.floor(n / 10);
      o[--i] = 0x30 + (n - q * 10);
      n = q;
    }
    o[--i] = 0x30 + n;
  }
}
