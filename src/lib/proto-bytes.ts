// Protocol Buffers wire format written straight into one reused buffer, for the OTLP span encoder:
// constant pieces (a field's key, an attribute's key with its value's opening) are one copy of
// bytes made once, ASCII strings are copied character by character, numbers are varints or
// little-endian words (no decimal text at all), and a nested message's length is written once
// its end is known: one byte is set aside for it, and the rare message of 128 bytes or more moves
// its bytes up to make room for a longer varint. Nothing is allocated per message.
//
// Why not protobufjs's Writer: it records every field as an operation object and builds a new
// buffer per message, garbage that a per-request encoder cannot afford (ARCHITECTURE §10).

/** A field's key byte: field number and wire type (numbers below 16 fit one byte). */
export const fieldKey = (field: number, wireType: 0 | 1 | 2 | 5): number => {
  if (field < 1 || field > 15) throw new Error(`field ${field}: one-byte keys only`);
  return (field << 3) | wireType;
};

/** Wire types. */
export const VARINT = 0;
export const I64 = 1;
export const LEN = 2;

/** Bytes made once (keys, constant fields): numbers are one-byte varints (0 to 127), strings UTF-8. */
export const protoConst = (...parts: Array<number | string | Uint8Array>): Uint8Array => {
  const chunks = parts.map((p) => {
    if (typeof p !== 'number') return typeof p === 'string' ? Buffer.from(p, 'utf8') : Buffer.from(p);
    if (!Number.isInteger(p) || p < 0 || p > 0x7f) throw new Error(`protoConst: ${p} is not a one-byte varint`);
    return Buffer.from([p]);
  });
  return new Uint8Array(Buffer.concat(chunks));
};

/** A length-delimited field made once: key, length, then the payload (a string's UTF-8 or bytes). */
export const protoField = (field: number, payload: string | Uint8Array): Uint8Array => {
  const body = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : Buffer.from(payload);
  const w = new ProtoBytes(body.length + 16);
  w.byte(fieldKey(field, LEN));
  w.varint(body.length);
  w.raw(body);
  return new Uint8Array(w.view());
};

/** Bytes a varint of `v` (a non-negative safe integer) takes. */
export function varintLength(v: number): number {
  let n = 1;
  while (v >= 128) {
    v = Math.floor(v / 128);
    n++;
  }
  return n;
}

/**
 * `v` (a non-negative safe integer) as a varint at `p` in `o`, which has room for it (10 bytes at
 * most); returns the position after it.
 */
export function putVarint(o: Uint8Array, p: number, v: number): number {
  // Seven bits at a time; above 2^31 the arithmetic stays in doubles (exact below 2^53).
  while (v >= 0x8000_0000) {
    o[p++] = (v % 128) | 0x80;
    v = Math.floor(v / 128);
  }
  let n = v | 0;
  while (n >= 0x80) {
    o[p++] = (n & 0x7f) | 0x80;
    n >>>= 7;
  }
  o[p++] = n;
  return p;
}

/** For each ASCII character: its value as a hex digit, or 255 when it is not one. */
const HEX_VALUE = new Uint8Array(0x80).fill(255);
for (let i = 0; i < 16; i++) {
  HEX_VALUE['0123456789abcdef'.charCodeAt(i)] = i;
  HEX_VALUE['0123456789ABCDEF'.charCodeAt(i)] = i;
}

const TWO_32 = 0x1_0000_0000;

export class ProtoBytes {
  /** `buf[0, at)` is what was written since the last reset; `buf` grows (and stays grown). */
  protected buf: Buffer;
  protected at = 0;
  private readonly f64 = new Float64Array(1);
  private readonly f64Bytes = new Uint8Array(this.f64.buffer);

  constructor(initialBytes = 4096) {
    this.buf = Buffer.allocUnsafe(initialBytes);
  }

  reset(): void {
    this.at = 0;
  }

  /** What was written since the last reset: a view that the next write may overwrite. */
  view(): Buffer {
    return this.buf.subarray(0, this.at);
  }

  protected room(n: number): void {
    if (this.at + n <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(2 * this.buf.length, this.at + n));
    this.buf.copy(grown, 0, 0, this.at);
    this.buf = grown;
  }

  /** Bytes as they are (constants made by protoConst or protoField). */
  raw(b: Uint8Array): void {
    const n = b.length;
    if (this.at + n > this.buf.length) this.room(n);
    this.buf.set(b, this.at);
    this.at += n;
  }

  byte(b: number): void {
    this.room(1);
    this.buf[this.at++] = b;
  }

  /** A non-negative safe integer as a varint. */
  varint(v: number): void {
    this.room(10);
    this.at = putVarint(this.buf, this.at, v);
  }

  /** A double, little-endian (wire type I64). */
  double(v: number): void {
    this.room(8);
    this.f64[0] = v;
    this.buf.set(this.f64Bytes, this.at);
    this.at += 8;
  }

  /**
   * Nanoseconds as a fixed64, from whole microseconds (a non-negative safe integer): the
   * nanoseconds since the epoch are past 2^53, so the two 32-bit words are made separately.
   */
  nanosFromMicros(us: number): void {
    this.room(8);
    const high = Math.floor(us / TWO_32);
    const lowNs = (us - high * TWO_32) * 1000;
    const carry = Math.floor(lowNs / TWO_32);
    this.buf.writeUInt32LE(lowNs - carry * TWO_32, this.at);
    this.buf.writeUInt32LE(high * 1000 + carry, this.at + 4);
    this.at += 8;
  }

  /** `s` as a length-delimited payload: its UTF-8 byte length, then the bytes. */
  str(s: string): void {
    const n = s.length;
    let ascii = true;
    for (let i = 0; i < n; i++) {
      if (s.charCodeAt(i) >= 0x80) {
        ascii = false;
        break;
      }
    }
    if (!ascii) {
      const bytes = Buffer.byteLength(s, 'utf8');
      this.varint(bytes);
      this.room(bytes);
      this.at += this.buf.write(s, this.at, 'utf8');
      return;
    }
    this.varint(n);
    this.room(n);
    const o = this.buf;
    const p = this.at;
    for (let i = 0; i < n; i++) o[p + i] = s.charCodeAt(i);
    this.at = p + n;
  }

  /**
   * Opens a nested message (or any length-delimited field) under `key`: returns the mark that
   * `close` takes once the payload is written.
   */
  open(key: number): number {
    this.room(2);
    this.buf[this.at++] = key;
    // One byte for the length; close makes room when it needs more.
    return this.at++;
  }

  close(mark: number): void {
    const len = this.at - mark - 1;
    if (len < 0x80) {
      this.buf[mark] = len;
      return;
    }
    const extra = varintLength(len) - 1;
    this.room(extra);
    this.buf.copyWithin(mark + 1 + extra, mark + 1, this.at);
    const end = this.at + extra;
    this.at = mark;
    this.varint(len);
    this.at = end;
  }

  /**
   * A UUID's 16 bytes (an OTLP trace id), from its 32 hex digits in either case; false, with
   * nothing written, when `s` is not a UUID.
   */
  uuidBytes(s: string): boolean {
    if (s.length !== 36 || s.charCodeAt(8) !== 0x2d || s.charCodeAt(13) !== 0x2d || s.charCodeAt(18) !== 0x2d || s.charCodeAt(23) !== 0x2d) return false;
    this.room(16);
    const at = this.at;
    if (!this.hexRun(s, 0, 8, at) || !this.hexRun(s, 9, 13, at + 4) || !this.hexRun(s, 14, 18, at + 6) || !this.hexRun(s, 19, 23, at + 8) || !this.hexRun(s, 24, 36, at + 10)) {
      return false;
    }
    this.at = at + 16;
    return true;
  }

  /** Hex digits as bytes (an even number of them, checked by the caller's format); false at the first non-digit. */
  hex(s: string): boolean {
    this.room(s.length >> 1);
    if (!this.hexRun(s, 0, s.length, this.at)) return false;
    this.at += s.length >> 1;
    return true;
  }

  /** `s[from, to)` (an even count of hex digits) as bytes at `p`; false at the first character that is not a hex digit. */
  private hexRun(s: string, from: number, to: number, p: number): boolean {
    const o = this.buf;
    for (let i = from; i < to; i += 2) {
      const a = s.charCodeAt(i);
      const b = s.charCodeAt(i + 1);
      const high = a < 0x80 ? HEX_VALUE[a] : 255;
      const low = b < 0x80 ? HEX_VALUE[b] : 255;
      if ((high | low) > 15) return false;
      o[p++] = (high << 4) | low;
    }
    return true;
  }
}
