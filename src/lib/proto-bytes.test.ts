import assert from 'node:assert/strict';
import { test } from 'node:test';
import protobuf from 'protobufjs';
import { fieldKey, I64, LEN, ProtoBytes, protoConst, protoField, VARINT, varintLength } from './proto-bytes.ts';

// protobufjs's Writer is the reference: an encoder written independently of this one.
const reference = (write: (w: protobuf.Writer) => void): Buffer => {
  const w = protobuf.Writer.create();
  write(w);
  return Buffer.from(w.finish());
};

/** A 64-bit integer as protobufjs takes it without a Long library: its two 32-bit words. */
const long = (v: bigint): number => ({ low: Number(v & 0xffff_ffffn), high: Number(v >> 32n), unsigned: true }) as unknown as number;

const written = (write: (w: ProtoBytes) => void, initialBytes = 4): Buffer => {
  const w = new ProtoBytes(initialBytes);
  write(w);
  return Buffer.from(w.view());
};

const VARINTS = [0, 1, 127, 128, 255, 300, 16_383, 16_384, 2 ** 21 - 1, 2 ** 21, 2 ** 28, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 35 + 5, 1_700_000_000_123_456, Number.MAX_SAFE_INTEGER];

test('varints of every length, to the largest safe integer, as protobufjs writes them', () => {
  for (const v of VARINTS) {
    const expected = reference((w) => w.uint64(long(BigInt(v))));
    assert.deepEqual(written((w) => w.varint(v)), expected, String(v));
    assert.equal(varintLength(v), expected.length, `length of ${v}`);
  }
});

test('nanoseconds from microseconds: the fixed64 of µs × 1000, past 2^53', () => {
  const micros = [0, 1, 999, 2 ** 32 - 1, 2 ** 32, 4_294_967_296_001, 1_763_798_400_123_456, Date.UTC(2099, 11, 31) * 1000 + 999_999];
  for (const us of micros) {
    const expected = reference((w) => w.fixed64(long(BigInt(us) * 1000n)));
    assert.deepEqual(written((w) => w.nanosFromMicros(us)), expected, String(us));
  }
});

test('doubles, little-endian', () => {
  for (const v of [0, -0, 0.5, 1.25, 123.456, -7.001, 1e300, Number.MIN_VALUE]) {
    assert.deepEqual(written((w) => w.double(v)), reference((w) => w.double(v)), String(v));
  }
});

test('strings: UTF-8 byte length, then the bytes (ASCII, multi-byte, 128 bytes and more)', () => {
  for (const s of ['', 'a', 'gpt-4o-mini', 'caf\u00e9', '\u65e5\u672c', 'emoji \ud83d\ude00', 'x'.repeat(127), 'x'.repeat(128), '\u00e9'.repeat(64), 'y'.repeat(20_000)]) {
    assert.deepEqual(written((w) => w.str(s)), reference((w) => w.string(s)), JSON.stringify(s.slice(0, 20)));
  }
});

test('a nested message gets its length when it closes, however long it grew, nested in others', () => {
  for (const n of [0, 1, 127, 128, 16_383, 16_384, 2 ** 21 + 3]) {
    const payload = 'p'.repeat(n);
    const expected = reference((w) => {
      w.uint32(fieldKey(9, LEN)).fork();
      w.uint32(fieldKey(1, LEN)).string('k');
      w.uint32(fieldKey(2, LEN)).fork().uint32(fieldKey(1, LEN)).string(payload).ldelim();
      w.ldelim();
      w.uint32(fieldKey(6, VARINT)).uint32(2);
    });
    const ours = written((w) => {
      const outer = w.open(fieldKey(9, LEN));
      w.raw(protoField(1, 'k'));
      const inner = w.open(fieldKey(2, LEN));
      w.byte(fieldKey(1, LEN));
      w.str(payload);
      w.close(inner);
      w.close(outer);
      w.byte(fieldKey(6, VARINT));
      w.varint(2);
    });
    assert.ok(ours.equals(expected), `payload of ${n} bytes`);
  }
});

test('a UUID as its 16 bytes, either case; anything else is refused with nothing written', () => {
  const id = '0F8FAD5B-d9cb-469f-A165-70867728950e';
  assert.deepEqual(written((w) => assert.equal(w.uuidBytes(id), true)), Buffer.from('0f8fad5bd9cb469fa16570867728950e', 'hex'));
  const bad = [
    '0f8fad5b-d9cb-469f-a165-70867728950',
    '0f8fad5b-d9cb-469f-a165-70867728950ee',
    '0f8fad5b d9cb-469f-a165-70867728950e',
    '0f8fad5b-d9cb-469f-a165-70867728950g',
    'g0f8fad5-d9cb-469f-a165-70867728950e',
    '0f8fad5b-d9cb-469f-a165-7086772895\u0660e',
    '0f8fad5bd9cb469fa16570867728950e1234',
  ];
  for (const s of bad) {
    assert.deepEqual(written((w) => assert.equal(w.uuidBytes(s), false)), Buffer.alloc(0), s);
  }
});

test('hex digits as bytes', () => {
  assert.deepEqual(written((w) => assert.equal(w.hex('00ff7A0b'), true)), Buffer.from([0, 255, 0x7a, 0x0b]));
  assert.deepEqual(written((w) => assert.equal(w.hex('00fz'), false)), Buffer.alloc(0));
});

test('field keys are one byte: field numbers above 15 are refused', () => {
  assert.equal(fieldKey(15, LEN), 0x7a);
  assert.equal(fieldKey(7, I64), 0x39);
  assert.throws(() => fieldKey(16, LEN), /one-byte keys only/);
});

test('protoConst: numbers are one-byte varints, anything larger is refused rather than written wrong', () => {
  assert.deepEqual(Buffer.from(protoConst(0x0a, 3, 'abc', new Uint8Array([1, 2]), 127)), Buffer.from([0x0a, 3, 0x61, 0x62, 0x63, 1, 2, 127]));
  assert.throws(() => protoConst(128), /128 is not a one-byte varint/);
  assert.throws(() => protoConst(-1), /not a one-byte varint/);
});
