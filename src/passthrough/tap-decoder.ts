// Content decoding for the usage tap only. The caller gets the upstream's bytes as sent (still
// compressed); the tap needs the text, so a compressed body is decoded on the side, off the
// relay path, bounded against decompression bombs. An encoding it does not know leaves the tap
// without input (no usage), never the relay broken.
import { decompressor } from '../lib/content-coding.ts';

export interface TapDecoder {
  /** True when the sink sees each chunk during `write` (no decoding), so `end` has nothing to wait for. */
  readonly sync: boolean;
  write(chunk: Buffer): void;
  /** Resolves once every decoded byte has reached the sink. */
  end(): Promise<void>;
}

/** Decoded bytes beyond this are not looked at. */
export const MAX_DECODED_BYTES = 64 * 1024 * 1024;

const done = Promise.resolve();

/**
 * A decoder feeding `sink` with the decoded body, or undefined when the body's encoding cannot
 * be decoded. `content-encoding` absent or `identity`: the bytes go straight to the sink.
 */
export function createTapDecoder(contentEncoding: string | string[] | undefined, sink: (chunk: Buffer) => void): TapDecoder | undefined {
  const encoding = (Array.isArray(contentEncoding) ? contentEncoding.join(',') : contentEncoding ?? '').trim().toLowerCase();
  if (encoding === '' || encoding === 'identity') return { sync: true, write: sink, end: () => done };
  const z = decompressor(encoding);
  if (z === undefined) return undefined;
  let decoded = 0;
  let failed = false;
  z.on('data', (chunk: Buffer) => {
    if (failed) return;
    decoded += chunk.length;
    if (decoded > MAX_DECODED_BYTES) {
      failed = true;
      z.destroy();
      return;
    }
    sink(chunk);
  });
  const finished = new Promise<void>((resolve) => {
    z.once('end', resolve);
    z.once('close', resolve);
    z.once('error', () => {
      failed = true;
      resolve();
    });
  });
  return {
    sync: false,
    write(chunk) {
      if (!failed && !z.destroyed) z.write(chunk);
    },
    end() {
      if (!z.destroyed) z.end();
      return finished;
    },
  };
}
