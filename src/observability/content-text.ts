// Content capture text (spec 3 §6 "Audit capture"): how captured request and response bytes
// become the strings an exporter with `content_mode: full` receives. Pure functions and one
// small incremental SSE reader; no I/O. Response text is *extracted* when the body is a known
// model-response shape (OpenAI chat/completions/responses, Anthropic messages; JSON or SSE) and
// holds any text, otherwise it is the *raw* body as UTF-8. Every string is bounded in UTF-8
// bytes and cut on a character boundary.
import zlib from 'node:zlib';

/** The text of one request as exporters receive it (each exporter trims further to its cap). */
export interface CapturedContent {
  /** The request body as UTF-8 ('' when there was none). */
  request: string;
  /** Extracted response text, or the raw response body as UTF-8. */
  response: string;
  /** True when either string is shorter than what the caller sent or was sent. */
  truncated: boolean;
}

/**
 * At most `maxBytes` bytes of `buf` as UTF-8, never ending in half a character: cut before a
 * character that does not fit, and (`more`: the bytes went on past `buf`) before one `buf` ends inside.
 */
export function utf8Prefix(buf: Buffer, maxBytes: number, more = false): string {
  if (buf.length <= maxBytes && !more) return buf.toString('utf8');
  return buf.toString('utf8', 0, safeEnd(buf, maxBytes));
}

/** The largest end ≤ `max` (and ≤ the length) after which no UTF-8 sequence of `buf` is left incomplete. */
function safeEnd(buf: Buffer, max: number): number {
  const end = Math.min(max, buf.length);
  // Back over at most three continuation bytes (10xxxxxx) to the lead byte of the last character.
  let i = end - 1;
  while (i >= 0 && end - i < 4 && (buf[i] & 0xc0) === 0x80) i--;
  if (i < 0) return end;
  const lead = buf[i];
  const size = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return i + size > end ? i : end;
}

/** `text` cut to at most `maxBytes` UTF-8 bytes on a character boundary; `cut` says whether it was. */
export function trimUtf8(text: string, maxBytes: number): { text: string; cut: boolean } {
  // Each UTF-16 unit is at most 3 UTF-8 bytes: short strings need no byte count at all.
  if (text.length * 3 <= maxBytes || Buffer.byteLength(text) <= maxBytes) return { text, cut: false };
  const buf = Buffer.from(text);
  return { text: buf.toString('utf8', 0, safeEnd(buf, maxBytes)), cut: true };
}

/** `content` as an exporter with cap `maxBytes` sends it. */
export function trimContent(content: CapturedContent, maxBytes: number): CapturedContent {
  const request = trimUtf8(content.request, maxBytes);
  const response = trimUtf8(content.response, maxBytes);
  if (!request.cut && !response.cut) return content;
  return { request: request.text, response: response.text, truncated: true };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Text of an OpenAI message `content`: a string, or an array of `{type: 'text', text}` parts. */
function messageContent(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let out = '';
  for (const part of content) if (isObject(part) && typeof part.text === 'string') out += part.text;
  return out;
}

/**
 * The text of a whole (non-streamed) model response, or undefined when `body` is no shape this
 * reads: OpenAI chat completion (`choices[].message.content`), legacy completion
 * (`choices[].text`), OpenAI responses (`output[].content[]` of type `output_text`), Anthropic
 * message (`content[]` of type `text`). Several choices are joined by a newline.
 */
export function jsonResponseText(body: unknown): string | undefined {
  if (!isObject(body)) return undefined;
  if (Array.isArray(body.choices)) {
    const texts: string[] = [];
    for (const c of body.choices) {
      if (!isObject(c)) continue;
      if (isObject(c.message)) texts.push(messageContent(c.message.content));
      else if (typeof c.text === 'string') texts.push(c.text);
    }
    return texts.join('\n');
  }
  if (body.type === 'message' && Array.isArray(body.content)) {
    let out = '';
    for (const block of body.content) if (isObject(block) && block.type === 'text' && typeof block.text === 'string') out += block.text;
    return out;
  }
  if (body.object === 'response' && Array.isArray(body.output)) {
    let out = '';
    for (const item of body.output) {
      if (!isObject(item) || !Array.isArray(item.content)) continue;
      for (const part of item.content) if (isObject(part) && part.type === 'output_text' && typeof part.text === 'string') out += part.text;
    }
    return out;
  }
  return undefined;
}

/**
 * Feed the text pieces of one stream event to `add(index, text)`: OpenAI chat chunks
 * (`choices[].delta.content`) and legacy completion chunks (`choices[].text`) per choice index,
 * Anthropic `content_block_delta` with a `text_delta`, OpenAI responses `response.output_text.delta`.
 */
export function streamEventText(event: unknown, add: (index: number, text: string) => void): void {
  if (!isObject(event)) return;
  if (Array.isArray(event.choices)) {
    for (const c of event.choices) {
      if (!isObject(c)) continue;
      const index = typeof c.index === 'number' ? c.index : 0;
      if (isObject(c.delta)) {
        const text = messageContent(c.delta.content);
        if (text !== '') add(index, text);
      } else if (typeof c.text === 'string' && c.text !== '') add(index, c.text);
    }
    return;
  }
  if (event.type === 'content_block_delta' && isObject(event.delta) && event.delta.type === 'text_delta' && typeof event.delta.text === 'string') {
    add(0, event.delta.text);
  } else if (event.type === 'response.output_text.delta' && typeof event.delta === 'string') {
    add(0, event.delta);
  }
}

/** Longest SSE line kept while waiting for its end; a longer one is skipped (it is no text delta worth keeping). */
const MAX_LINE_CHARS = 4 * 1024 * 1024;
/** Choice indexes tracked for n > 1 streams. */
const MAX_CHOICES = 16;

/**
 * Reads an SSE body piece by piece (pieces may split lines and characters anywhere) and keeps
 * the text of its events, at most `maxBytes` UTF-8 bytes; the rest is dropped and `truncated`
 * set. Used incrementally while a stream is relayed, or at once over a captured body.
 */
export class SseTextCollector {
  private readonly maxBytes: number;
  private line = '';
  private skipping = false;
  private data: string | undefined = undefined;
  private readonly parts: string[] = [];
  private bytes = 0;
  truncated = false;

  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
  }

  push(piece: string): void {
    if (this.truncated) return;
    let start = 0;
    for (;;) {
      const nl = piece.indexOf('\n', start);
      if (nl < 0) break;
      let line = piece.slice(start, nl);
      start = nl + 1;
      if (this.line !== '') {
        line = this.line + line;
        this.line = '';
      }
      if (this.skipping) {
        this.skipping = false;
        continue;
      }
      this.onLine(line.endsWith('\r') ? line.slice(0, -1) : line);
      if (this.truncated) return;
    }
    if (start < piece.length && !this.skipping) {
      this.line += start === 0 ? piece : piece.slice(start);
      if (this.line.length > MAX_LINE_CHARS) {
        this.line = '';
        this.skipping = true;
      }
    }
  }

  /** The body ended: an event without its closing blank line still counts. */
  end(): void {
    if (this.line !== '' && !this.skipping) this.onLine(this.line);
    this.line = '';
    this.dispatch();
  }

  /** The text so far: the pieces of each choice in order, choices joined by a newline. */
  get text(): string {
    let out = '';
    let first = true;
    for (const p of this.parts) {
      if (p === undefined) continue;
      out += first ? p : `\n${p}`;
      first = false;
    }
    return out;
  }

  private onLine(line: string): void {
    if (line === '') {
      this.dispatch();
      return;
    }
    if (!line.startsWith('data:')) return; // event:, id:, retry:, comments
    const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
    this.data = this.data === undefined ? value : `${this.data}\n${value}`;
  }

  private dispatch(): void {
    const data = this.data;
    this.data = undefined;
    if (data === undefined || data === '[DONE]') return;
    let event: unknown;
    try {
      event = JSON.parse(data);
    } catch {
      return;
    }
    streamEventText(event, this.add);
  }

  private readonly add = (index: number, text: string): void => {
    if (this.truncated || index < 0 || index >= MAX_CHOICES) return;
    const size = Buffer.byteLength(text);
    let piece = text;
    if (this.bytes + size > this.maxBytes) {
      piece = trimUtf8(text, this.maxBytes - this.bytes).text;
      this.truncated = true;
    }
    this.bytes += size;
    this.parts[index] = (this.parts[index] ?? '') + piece;
  };
}

/** What is known of a captured response body. */
export interface ResponseBody {
  /** The bytes the caller was sent, at most the capture limit. */
  raw: Buffer;
  /** True when the caller was sent more than `raw`. */
  rawTruncated: boolean;
  contentType: string | undefined;
  contentEncoding: string | undefined;
}

const DECODED_MAX_BYTES = 16 * 1024 * 1024;

/** The decoded body, or undefined when the encoding is unknown or the bytes do not decode. */
function decode(raw: Buffer, encoding: string | undefined, limit: number): Buffer | undefined {
  const e = (encoding ?? '').trim().toLowerCase();
  if (e === '' || e === 'identity') return raw;
  // A cut body decodes as far as it goes (SYNC_FLUSH), and a bomb stops at the output bound.
  const maxOutputLength = Math.min(DECODED_MAX_BYTES, Math.max(limit * 16, 1024 * 1024));
  try {
    switch (e) {
      case 'gzip':
      case 'x-gzip':
        return zlib.gunzipSync(raw, { finishFlush: zlib.constants.Z_SYNC_FLUSH, maxOutputLength });
      case 'deflate':
        return zlib.inflateSync(raw, { finishFlush: zlib.constants.Z_SYNC_FLUSH, maxOutputLength });
      case 'br':
        return zlib.brotliDecompressSync(raw, { finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH, maxOutputLength });
      default:
        return undefined;
    }
  } catch {
    return undefined;
  }
}

/** True when `body` starts like an SSE stream (a `data:`, `event:`, `id:` line or a comment). */
function looksLikeSse(body: Buffer): boolean {
  const head = body.toString('latin1', 0, Math.min(body.length, 6));
  return head.startsWith('data:') || head.startsWith('event:') || head.startsWith('id:') || head.startsWith(':');
}

/** First byte that is not JSON whitespace. */
function firstSignificant(body: Buffer): number {
  for (const b of body) if (b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09) return b;
  return -1;
}

/**
 * The response text of a captured body, at most `limit` UTF-8 bytes: the extracted text when
 * the body is a known JSON or SSE model response holding text, else the raw body as UTF-8
 * (decompressed first when its content-encoding allows).
 */
export function responseText(body: ResponseBody, limit: number): { text: string; truncated: boolean } {
  const decoded = decode(body.raw, body.contentEncoding, limit);
  const bytes = decoded ?? body.raw;
  if (decoded !== undefined && bytes.length > 0) {
    const type = (body.contentType ?? '').toLowerCase();
    if (type.includes('text/event-stream') || looksLikeSse(bytes)) {
      const sse = new SseTextCollector(limit);
      sse.push(bytes.toString('utf8'));
      if (!body.rawTruncated) sse.end();
      const text = sse.text;
      if (text !== '') return { text, truncated: sse.truncated || body.rawTruncated };
    } else if (!body.rawTruncated && (firstSignificant(bytes) === 0x7b || firstSignificant(bytes) === 0x5b)) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(bytes.toString('utf8'));
      } catch {
        parsed = undefined;
      }
      const text = jsonResponseText(parsed);
      if (text !== undefined && text !== '') {
        const t = trimUtf8(text, limit);
        return { text: t.text, truncated: t.cut };
      }
    }
  }
  return { text: utf8Prefix(bytes, limit, body.rawTruncated), truncated: body.rawTruncated || bytes.length > limit };
}
