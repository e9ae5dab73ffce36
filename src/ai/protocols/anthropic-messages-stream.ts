// Relaying an Anthropic Messages event stream on the native path (caller and upstream both speak
// Messages): lines in, lines out. Only `message_start` is parsed and re-serialised (to put the
// caller's alias in `message.model`); every other frame is forwarded byte for byte while usage,
// the stop reason, the end event and in-band errors are tapped on the side.
import { findTopLevelMember } from '../../lib/json-scan.ts';
import { anthropicUsageToCanonical, type AnthropicUsage, type CanonicalUsage } from './anthropic-messages.ts';

const USAGE_FIELDS = ['input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens'] as const;

function memberObject(json: string, key: string): Record<string, unknown> | undefined {
  const span = findTopLevelMember(json, key);
  if (span === undefined || json.charCodeAt(span.start) !== 123) return undefined;
  try {
    return JSON.parse(json.slice(span.start, span.end)) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

function eventType(payload: string): string | undefined {
  const span = findTopLevelMember(payload, 'type');
  if (span === undefined || payload.charCodeAt(span.start) !== 34) return undefined;
  return payload.slice(span.start + 1, span.end - 1);
}

export class AnthropicMessagesStreamRelay {
  /** `message_stop` arrived: the response is complete. */
  sawStop = false;
  /** A `message_delta` carried a non-null `stop_reason`. */
  sawStopReason = false;
  /** The data text of an `error` event, when one arrived (decode with readAnthropicError). */
  inBandError: string | undefined = undefined;
  private readonly alias: string;
  private readonly raw: AnthropicUsage = {};
  private sawUsage = false;
  /** The `event:` field of the frame being read. */
  private event: string | undefined = undefined;

  /** @param alias the caller's model alias, written into `message_start` */
  constructor(alias: string) {
    this.alias = alias;
  }

  /** Usage so far (canonical); the latest value of each Anthropic counter wins. */
  get usage(): CanonicalUsage | undefined {
    return this.sawUsage ? anthropicUsageToCanonical(this.raw) : undefined;
  }

  /** Returns the text to forward for one line, with its terminator. */
  line(line: string): string {
    if (line.length === 0) {
      this.event = undefined;
      return '\n';
    }
    if (line.startsWith('event:')) {
      this.event = line.charCodeAt(6) === 32 ? line.slice(7) : line.slice(6);
      if (this.event === 'message_stop') this.sawStop = true;
      return line + '\n';
    }
    if (!line.startsWith('data:')) return line + '\n';
    const event = this.event;
    // content_block_delta is nearly every frame: settle it before anything else.
    if (event === 'content_block_delta' || event === 'ping' || event === 'content_block_start' || event === 'content_block_stop') {
      return line + '\n';
    }
    const payload = line.slice(line.charCodeAt(5) === 32 ? 6 : 5);
    const type = event ?? eventType(payload);
    switch (type) {
      case 'message_start':
        return this.messageStart(line, payload);
      case 'message_delta': {
        const usage = memberObject(payload, 'usage');
        if (usage !== undefined) this.tapUsage(usage);
        const delta = memberObject(payload, 'delta');
        if (delta !== undefined && typeof delta.stop_reason === 'string') this.sawStopReason = true;
        break;
      }
      case 'message_stop':
        this.sawStop = true;
        break;
      case 'error':
        this.inBandError = payload;
        break;
    }
    return line + '\n';
  }

  private messageStart(line: string, payload: string): string {
    let frame: Record<string, unknown>;
    try {
      frame = JSON.parse(payload) as Record<string, unknown>;
    } catch {
      return line + '\n';
    }
    const message = frame.message;
    if (message === null || typeof message !== 'object') return line + '\n';
    const m = message as Record<string, unknown>;
    if (m.usage !== null && typeof m.usage === 'object') this.tapUsage(m.usage as Record<string, unknown>);
    m.model = this.alias;
    return 'data: ' + JSON.stringify(frame) + '\n';
  }

  private tapUsage(u: Record<string, unknown>): void {
    for (const f of USAGE_FIELDS) {
      const v = u[f];
      if (typeof v === 'number') {
        this.raw[f] = v;
        this.sawUsage = true;
      }
    }
  }
}
