// Request ids: adopt a caller's id from the configured headers when it is well-formed, else mint one.
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

export const REQUEST_ID_HEADER = 'x-tollgate-request-id';

/** 1–256 visible ASCII characters: safe to echo in a header and a log line. */
export function isValidRequestId(value: string): boolean {
  if (value.length === 0 || value.length > 256) return false;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

export function requestIdFrom(headers: IncomingHttpHeaders, acceptHeaders: readonly string[]): string {
  for (const name of acceptHeaders) {
    const value = headers[name];
    if (typeof value === 'string' && isValidRequestId(value)) return value;
  }
  return randomUUID();
}
