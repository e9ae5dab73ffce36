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
 *
 * The work is linear in the bytes received: each chunk is searched once, and a line that spans
 * chunks is kept as the pieces it arrived in, joined once when its terminator arrives. (Joining
 * and rescanning the whole unterminated line on every chunk would be quadratic: a 16 MiB line in
 * 64 KiB chunks would hold the event loop for tens of seconds.)
 */
export class SseLineSplitter {
  private readonly decoder = new StringDecoder('utf8');
  /** The unterminated line so far, in the pieces it arrived in. */
  private pending: string[] = [];
  private pendingLength = 0;
  /**
   * The last chunk ended in `\r`: the pending line is complete, but it is emitted with the next
   * chunk, whose leading `\n` would be the rest of a `\r\n`.
   */
  private pendingCr = false;
  private readonly maxFrame: number;
  private pendingFrame = 0;

  constructor(maxFrame = MAX_SSE_FRAME_BYTES) {
    this.maxFrame = maxFrame;
  }

  /** Calls `onLine` for every complete line in `chunk`. Throws SseFrameTooLarge. */
  push(chunk: Buffer | string, onLine: (line: string) => void): void {
    const text = typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    const n = text.length;
    /** Where the current line starts in `text`. */
    let from = 0;
    if (this.pendingCr && n > 0) {
      this.pendingCr = false;
      if (text.charCodeAt(0) === 10) from = 1;
      this.emit(this.takePending(''), onLine);
    }
    // The next `\n` and `\r` at or after `from`, -1 when the chunk has no more. Each is searched
    // for again only once passed, so every character is looked at once per terminator kind.
    let lf = text.indexOf('\n', from);
    let cr = text.indexOf('\r', from);
    while (lf >= 0 || cr >= 0) {
      let end: number;
      let next: number;
      if (cr < 0 || (lf >= 0 && lf < cr)) {
        end = lf;
        next = lf + 1;
      } else if (cr + 1 === n) {
        break; // a lone \r at the end may be half of \r\n
      } else {
        end = cr;
        next = text.charCodeAt(cr + 1) === 10 ? cr + 2 : cr + 1;
      }
      const head = text.slice(from, end);
      this.emit(this.pending.length === 0 ? head : this.takePending(head), onLine);
      from = next;
      if (lf >= 0 && lf < from) lf = text.indexOf('\n', from);
      if (cr >= 0 && cr < from) cr = text.indexOf('\r', from);
    }
    if (cr >= 0) {
      this.keep(text, from, cr);
      this.pendingCr = true;
    } else {
      this.keep(text, from, n);
    }
    // The held `\r` counts, as a character of the unterminated text.
    if (this.pendingLength + (this.pendingCr ? 1 : 0) + this.pendingFrame > this.maxFrame) throw new SseFrameTooLarge();
  }

  /**
   * The last line at end of stream, '' when none is left: text without a terminator, or a line
   * ended by a `\r` that no `\n` can follow any more.
   */
  flush(): string {
    const rest = this.takePending('') + this.decoder.end();
    this.pendingCr = false;
    return rest;
  }

  private emit(line: string, onLine: (line: string) => void): void {
    this.pendingFrame = line.length === 0 ? 0 : this.pendingFrame + line.length;
    onLine(line);
  }

  /** Adds `text[from, to)` to the unterminated line. */
  private keep(text: string, from: number, to: number): void {
    if (to <= from) return;
    this.pending.push(from === 0 && to === text.length ? text : text.slice(from, to));
    this.pendingLength += to - from;
  }

  /** The pending pieces followed by `tail`, as one string; clears them. */
  private takePending(tail: string): string {
    const parts = this.pending;
    if (parts.length === 0) return tail;
    this.pending = [];
    this.pendingLength = 0;
    if (parts.length === 1) return parts[0] + tail;
    parts.push(tail);
    return parts.join('');
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
