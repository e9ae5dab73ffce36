// Decompressors for the HTTP content codings an upstream may answer with.
import zlib from 'node:zlib';
import type { Transform } from 'node:stream';

/** A decompressor for `encoding` (lowercase, one coding), undefined for one it does not know. */
export function decompressor(encoding: string): Transform | undefined {
  switch (encoding) {
    case 'gzip':
    case 'x-gzip':
      return zlib.createGunzip();
    case 'deflate':
      return zlib.createInflate();
    case 'br':
      return zlib.createBrotliDecompress();
    case 'zstd':
      return typeof zlib.createZstdDecompress === 'function' ? zlib.createZstdDecompress() : undefined;
    default:
      return undefined;
  }
}
