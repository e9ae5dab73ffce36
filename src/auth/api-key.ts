// Caller API keys (spec 2 §5): read the presented credential and hash it for lookup.
// Keys are stored only as SHA-256 hex; the presented plaintext never leaves this module.
import { hash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/**
 * The presented key: `Authorization: Bearer <k>` (preferred), bare `Authorization: <k>`, or
 * `x-api-key: <k>`. Undefined when none is present.
 */
export function presentedKey(headers: IncomingHttpHeaders): string | undefined {
  const auth = headers.authorization;
  if (auth !== undefined) {
    const value = auth.trim();
    if (value.length > 7 && value.slice(0, 7).toLowerCase() === 'bearer ') {
      const token = value.slice(7).trim();
      if (token !== '') return token;
    } else if (value !== '' && value.toLowerCase() !== 'bearer') {
      return value;
    }
  }
  const x = headers['x-api-key'];
  const xv = Array.isArray(x) ? x[0] : x;
  if (xv !== undefined && xv.trim() !== '') return xv.trim();
  return undefined;
}

export function hashKey(key: string): string {
  // One-shot crypto.hash: no Hash object per request.
  return hash('sha256', key, 'hex');
}
