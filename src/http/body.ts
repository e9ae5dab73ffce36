// Reading request bodies under the configured size cap (413 over it).
import { GatewayError } from '../lib/errors.ts';
import type { IncomingHttpHeaders } from 'node:http';
import type { RequestContext } from './context.ts';

function tooLarge(limit: number): GatewayError {
  return new GatewayError('request_too_large', `request body exceeds ${limit}-byte limit`, {
    headers: { connection: 'close' },
  });
}

/** The request declares (Content-Length) a body over `limit` (0 = no cap). */
export function declaresOverLimit(headers: IncomingHttpHeaders, limit: number): boolean {
  const declared = headers['content-length'];
  return limit > 0 && declared !== undefined && Number(declared) > limit;
}

/** Reads the whole body; `limit` 0 means no cap. Rejects with a GatewayError. */
export function readBody(ctx: RequestContext, limit: number): Promise<Buffer> {
  const req = ctx.req;
  if (declaresOverLimit(req.headers, limit)) {
    return Promise.reject(tooLarge(limit));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (limit > 0 && size > limit) {
        cleanup();
        req.resume();
        reject(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      cleanup();
      ctx.requestBytes = size;
      const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size);
      // Content capture keeps the body by reference; it is turned into text only at emit.
      if (ctx.capture !== undefined) ctx.capture.request = body;
      resolve(body);
    };
    const onError = (err: Error): void => {
      cleanup();
      reject(new GatewayError('invalid_request', 'request body could not be read', { cause: err }));
    };
    const onAborted = (): void => {
      cleanup();
      reject(new GatewayError('invalid_request', 'client closed the connection while sending the body'));
    };
    const cleanup = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onAborted);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onAborted);
  });
}
