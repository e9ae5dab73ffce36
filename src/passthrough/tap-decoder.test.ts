import { test } from 'node:test';
import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { createTapDecoder } from './tap-decoder.ts';

async function decode(encoding: string | undefined, body: Buffer, pieces = 3): Promise<string | undefined> {
  const out: Buffer[] = [];
  const d = createTapDecoder(encoding, (c) => out.push(c));
  if (d === undefined) return undefined;
  const step = Math.ceil(body.length / pieces);
  for (let i = 0; i < body.length; i += step) d.write(body.subarray(i, i + step));
  await d.end();
  return Buffer.concat(out).toString();
}

const text = JSON.stringify({ usage: { prompt_tokens: 3 }, pad: 'x'.repeat(2000) });

test('identity bodies pass straight through', async () => {
  assert.equal(await decode(undefined, Buffer.from(text)), text);
  assert.equal(await decode('identity', Buffer.from(text)), text);
});

test('gzip, deflate and br bodies are decoded for the tap', async () => {
  assert.equal(await decode('gzip', zlib.gzipSync(text)), text);
  assert.equal(await decode('GZIP', zlib.gzipSync(text)), text);
  assert.equal(await decode('deflate', zlib.deflateSync(text)), text);
  assert.equal(await decode('br', zlib.brotliCompressSync(text)), text);
});

test('unknown or stacked encodings give no decoder; corrupt input ends quietly', async () => {
  assert.equal(await decode('compress', Buffer.from(text)), undefined);
  assert.equal(await decode('gzip, br', Buffer.from(text)), undefined);
  assert.equal(await decode('gzip', Buffer.from('not gzip at all')), '');
});
