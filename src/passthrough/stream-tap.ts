// The side tap of a relayed event stream: the bytes go to the caller untouched; a copy is split
// into events here to read usage and spot in-band errors. Frames are only parsed when they can
// matter (they mention usage or an error, or are labelled usage frames).
//
// Usage (spec 3 §6): for chat, responses and completions requests, the usage the stream's events
// report (a top-level `usage`, messages-style `message.usage`, responses-style
// `response.usage`); for every other request the opaque rules: a top-level `usage` object on any
// frame, or a flat token report on a frame labelled `event: usage` or `event: token_usage`.
// Counts merge field-wise by maximum.
//
// In-band errors (spec 3 §3): an `event: error` frame, a `type: "error"` or `response.failed`
// event, or a top-level `error` member (JSON-RPC messages excepted: their errors are replies, not
// stream failures). The stream is recorded with the error's 4xx status when it carries one,
// else 502.
import { SseEventAssembler, SseFrameTooLarge, SseLineSplitter, type SseFrame } from '../lib/sse-lines.ts';
import { isModelShape, type RequestShape } from './request-shape.ts';
import { isObject, mergeTokenCounts, readTokenCounts, type TokenCounts } from './token-counts.ts';
import { findTopLevelMember } from '../lib/json-scan.ts';
import { inBandErrorStatus, reportsError } from '../lib/in-band-status.ts';

/**
 * An error event seen in a relayed stream. Its text is not kept: a pass-through upstream may put
 * anything there, the caller's own credential included, and it would reach the logs and sinks.
 */
export interface InBandError {
  readonly status: number;
}

/** What the logs and usage events say of an in-band error (as on the model endpoints). */
export const IN_BAND_MESSAGE = 'upstream sent an error event mid-stream';

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function topLevelObject(data: string, key: string): unknown {
  const span = findTopLevelMember(data, key);
  if (span === undefined || data.charCodeAt(span.start) !== 123) return undefined;
  return parse(data.slice(span.start, span.end));
}

export class EventStreamTap {
  usage: TokenCounts | undefined = undefined;
  inBandError: InBandError | undefined = undefined;
  /** Called once, when the first in-band error event is read. */
  onInBandError: ((error: InBandError) => void) | undefined = undefined;
  private readonly modelShape: boolean;
  private readonly lines = new SseLineSplitter();
  private readonly events = new SseEventAssembler();
  /** Set when a frame outgrew the splitter bound: the rest is relayed without looking. */
  private blind = false;
  private readonly onLine = (line: string): void => {
    const frame = this.events.line(line);
    if (frame !== undefined) this.frame(frame);
  };

  constructor(shape: RequestShape) {
    this.modelShape = isModelShape(shape);
  }

  push(chunk: Buffer): void {
    if (this.blind) return;
    try {
      this.lines.push(chunk, this.onLine);
    } catch (err) {
      if (!(err instanceof SseFrameTooLarge)) throw err;
      this.blind = true;
    }
  }

  /** End of stream: an unterminated last frame still counts. */
  end(): void {
    if (this.blind) return;
    const rest = this.lines.flush();
    if (rest.length > 0) this.onLine(rest);
    const last = this.events.end();
    if (last !== undefined) this.frame(last);
  }

  private frame(f: SseFrame): void {
    const data = f.data;
    if (data === '[DONE]') return;
    if (this.inBandError === undefined && (f.event === 'error' || data.includes('"error"') || data.includes('response.failed'))) {
      this.checkError(f);
    }
    if (f.event === 'usage' || f.event === 'token_usage') {
      this.add(readTokenCounts(parse(data)));
      return;
    }
    if (!data.includes('usage')) return;
    this.add(readTokenCounts(topLevelObject(data, 'usage')));
    if (!this.modelShape) return;
    // messages-style message_start carries the prompt side in message.usage; responses-style
    // terminal events carry response.usage.
    const message = topLevelObject(data, 'message');
    if (isObject(message)) this.add(readTokenCounts(message.usage));
    const response = topLevelObject(data, 'response');
    if (isObject(response)) this.add(readTokenCounts(response.usage));
  }

  private add(counts: TokenCounts | undefined): void {
    if (counts !== undefined) this.usage = mergeTokenCounts(this.usage, counts);
  }

  private checkError(f: SseFrame): void {
    const obj = parse(f.data);
    let err: unknown;
    if (isObject(obj)) {
      if (obj.type === 'response.failed') err = isObject(obj.response) ? obj.response.error ?? {} : {};
      else if (obj.type === 'error') err = obj.error ?? obj;
      else if (reportsError(obj.error) && obj.jsonrpc === undefined) err = obj.error;
      else if (f.event === 'error') err = obj;
    } else if (f.event === 'error') {
      err = {};
    }
    if (err === undefined) return;
    this.inBandError = { status: inBandErrorStatus(err) };
    this.onInBandError?.(this.inBandError);
  }
}
