// Incremental SSE line splitting for event streams: bytes in, complete lines out, with the
// 16 MiB bound on an unterminated frame.
import { StringDecoder } from 'node:string_decoder';

export const MAX_SSE_FRAME_BYTES = 16 * 1024 * 1024;

export class SseFrameTooLarge extends Error {
  constructor() {
    super(`upstream stream frame exceeded ${MAX_SSE_FRAME_BYTES} bytes without a terminator`);
  }
}

/**
 * Splits a byte stream into lines (without their terminator). Handles `\n`, `\r\n` and `\r`,
 * multi-byte characters split across chunks, and lines split across chunks.
 */
export class SseLineSplitter {
  private readonly decoder = new StringDecoder('utf8');
  private pending = '';
  private readonly maxFrame: number;
  private pendingFrame = 0;

  constructor(maxFrame = MAX_SSE_FRAME_BYTES) {
    this.maxFrame = maxFrame;
  }

  /** Calls `onLine` for every complete line in `chunk`. Throws SseFrameTooLarge. */
  push(chunk: Buffer | string, onLine: (line: string) => void): void {
    const text = this.pending + (typeof chunk === 'string' ? chunk : this.decoder.write(chunk));
    let start = 0;
    const n = text.length;
    for (let i = 0; i < n; i++) {
      const c = text.charCodeAt(i);
      if (c === 10 || c === 13) {
        if (c === 13 && i + 1 === n) break; // a lone \r at the end may be half of \r\n
        const line = text.slice(start, i);
        if (c === 13 && text.charCodeAt(i + 1) === 10) i++;
        start = i + 1;
        this.pendingFrame = line.length === 0 ? 0 : this.pendingFrame + line.length;
        onLine(line);
      }
    }
    this.pending = start === 0 ? text : text.slice(start);
    if (this.pending.length + this.pendingFrame > this.maxFrame) throw new SseFrameTooLarge();
  }

  /** Text left without a terminator at end of stream. */
  flush(): string {
    const rest = this.pending + this.decoder.end();
    this.pending = '';
    return rest;
  }
}

/** One assembled server-sent event. */
export interface SseFrame {
  event: string | undefined;
  data: string;
}

/**
 * Assembles SSE lines (from SseLineSplitter) into events per the EventSource rules: `event:` and
 * `data:` fields (one optional space after the colon), several `data:` lines joined with `\n`,
 * comments and other fields ignored, a blank line dispatches. A frame without data is dropped.
 */
export class SseEventAssembler {
  private event: string | undefined = undefined;
  private data: string[] = [];

  /** Feed one line; returns the event it completes, if any. */
  line(line: string): SseFrame | undefined {
    if (line.length === 0) return this.dispatch();
    if (line.charCodeAt(0) === 58) return undefined; // ':' comment
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
    return undefined;
  }

  /** End of stream: the last event when the upstream did not terminate it with a blank line. */
  end(): SseFrame | undefined {
    return this.dispatch();
  }

  private dispatch(): SseFrame | undefined {
    const event = this.event;
    const data = this.data;
    this.event = undefined;
    if (data.length === 0) return undefined;
    this.data = [];
    return { event, data: data.length === 1 ? data[0] : data.join('\n') };
  }
}
