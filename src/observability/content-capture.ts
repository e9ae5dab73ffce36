// The content capture record of one request (spec 3 §6 "Audit capture"), created at receive only
// while some exporter has `content_mode: full`: the request body (the Buffer `readBody` read,
// kept by reference) and a tee of what is written to the caller (bounded by the largest
// exporter cap). An event stream's text is extracted as it passes, so a long stream is not
// judged by its first `limit` bytes of framing. Turned into strings once, at emit, and handed to
// the exporters beside the usage event, never inside it.
import type { ServerResponse } from 'node:http';
import { StringDecoder } from 'node:string_decoder';
import { responseText, SseTextCollector, utf8Prefix, type CapturedContent } from './content-text.ts';

type Method = (...args: unknown[]) => unknown;

/** The value of header `name` (lowercase) in a `writeHead` headers argument: a map or a raw list. */
export function headerIn(headers: unknown, name: string): string | undefined {
  if (Array.isArray(headers)) {
    if (Array.isArray(headers[0])) {
      for (const pair of headers as unknown[][]) if (String(pair[0]).toLowerCase() === name) return String(pair[1]);
      return undefined;
    }
    for (let i = 0; i + 1 < headers.length; i += 2) if (String(headers[i]).toLowerCase() === name) return String(headers[i + 1]);
    return undefined;
  }
  if (typeof headers !== 'object' || headers === null) return undefined;
  for (const [k, v] of Object.entries(headers)) {
    if (k.toLowerCase() === name && v !== undefined) return Array.isArray(v) ? v.join(', ') : String(v);
  }
  return undefined;
}

export class ContentCapture {
  /** Bytes kept of each side: the largest `content_max_bytes` of the full-mode exporters. */
  readonly limit: number;
  /** The request body as read (set by `readBody`). */
  request: Buffer | undefined = undefined;
  private readonly res: ServerResponse;
  private raw: Buffer[] = [];
  private rawBytes = 0;
  private rawTruncated = false;
  private started = false;
  private contentType: string | undefined = undefined;
  private contentEncoding: string | undefined = undefined;
  private sse: SseTextCollector | undefined = undefined;
  private decoder: StringDecoder | undefined = undefined;
  private result: CapturedContent | undefined = undefined;

  /** Start capturing `res`: its writeHead, write and end are wrapped for this response only. */
  constructor(res: ServerResponse, limit: number) {
    this.res = res;
    this.limit = limit;
    const target = res as unknown as { writeHead: Method; write: Method; end: Method };
    const writeHead = target.writeHead;
    const write = target.write;
    const end = target.end;
    target.writeHead = (...args: unknown[]) => {
      const headers = typeof args[1] === 'string' ? args[2] : args[1];
      this.contentType ??= headerIn(headers, 'content-type');
      this.contentEncoding ??= headerIn(headers, 'content-encoding');
      return writeHead.apply(res, args);
    };
    target.write = (...args: unknown[]) => {
      this.take(args[0], args[1]);
      return write.apply(res, args);
    };
    target.end = (...args: unknown[]) => {
      if (!res.writableEnded) this.take(args[0], args[1]);
      return end.apply(res, args);
    };
  }

  private take(chunk: unknown, encoding: unknown): void {
    if (typeof chunk !== 'string' && !(chunk instanceof Uint8Array)) return;
    if (chunk.length === 0) return;
    if (!this.started) this.start();
    const room = this.limit - this.rawBytes;
    if (room <= 0 && this.sse === undefined) {
      this.rawTruncated = true;
      return;
    }
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8') : chunk;
    // Bytes, not the string, through the decoder: a character split by an earlier chunk stays whole.
    if (this.sse !== undefined) this.sse.push(this.decoder!.write(bytes));
    if (room <= 0) {
      this.rawTruncated = true;
      return;
    }
    // A copy: the relay's buffers are not ours to keep alive, and the kept part is bounded.
    const kept = Buffer.from(bytes.subarray(0, room));
    if (bytes.length > room) this.rawTruncated = true;
    this.raw.push(kept);
    this.rawBytes += kept.length;
  }

  /** First body byte: headers set through setHeader are known now too. */
  private start(): void {
    this.started = true;
    this.contentType ??= header(this.res.getHeader('content-type'));
    this.contentEncoding ??= header(this.res.getHeader('content-encoding'));
    const encoding = (this.contentEncoding ?? '').trim().toLowerCase();
    if ((this.contentType ?? '').toLowerCase().includes('text/event-stream') && (encoding === '' || encoding === 'identity')) {
      this.sse = new SseTextCollector(this.limit);
      this.decoder = new StringDecoder('utf8');
    }
  }

  /** The captured strings, each at most `limit` UTF-8 bytes; computed once, then the bytes are let go. */
  content(): CapturedContent {
    if (this.result !== undefined) return this.result;
    const body = this.request;
    const request = body === undefined ? '' : utf8Prefix(body, this.limit);
    const requestCut = body !== undefined && body.length > this.limit;
    let response: { text: string; truncated: boolean } | undefined;
    const sse = this.sse;
    if (sse !== undefined) {
      if (this.decoder !== undefined) sse.push(this.decoder.end());
      sse.end();
      const text = sse.text;
      if (text !== '') response = { text, truncated: sse.truncated };
    }
    response ??= responseText(
      { raw: this.raw.length === 1 ? this.raw[0] : Buffer.concat(this.raw, this.rawBytes), rawTruncated: this.rawTruncated, contentType: this.contentType, contentEncoding: this.contentEncoding },
      this.limit,
    );
    this.result = { request, response: response.text, truncated: requestCut || response.truncated };
    this.request = undefined;
    this.raw = [];
    this.sse = undefined;
    return this.result;
  }
}

function header(v: number | string | string[] | undefined): string | undefined {
  if (v === undefined) return undefined;
  return Array.isArray(v) ? v.join(', ') : String(v);
}
