// Relaying an OpenAI Chat Completions event stream on the native path: lines in, lines out.
// It rewrites `model` to the caller's alias, taps usage, spots the end marker, finish reasons and
// in-band errors, and drops the usage-only chunk the gateway asked for on the caller's behalf.
// Frames are never parsed and re-serialised; only the usage frame is parsed.
import { isJsonSpace, replaceTopLevelString } from '../../lib/json-scan.ts';
import { inBandErrorStatus, reportsError } from '../../lib/in-band-status.ts';
import { scanUsage, type OpenAIUsage } from './openai-chat.ts';
import type { CanonicalUsage, StreamError } from './canonical.ts';
import { liftReasoning, liftReasoningText, type OpenAIResponseOptions } from './openai-response-options.ts';

export class OpenAIChatStreamRelay {
  usage: OpenAIUsage | undefined = undefined;
  sawDone = false;
  sawFinish = false;
  /**
   * A chunk carried a choice. A stream whose `[DONE]` comes before any did answered nothing: that
   * `[DONE]` is held back so the caller's stream ends with an error, not a clean empty answer.
   */
  sawChoice = false;
  /** `[DONE]` arrived before any choice (and was not relayed). */
  emptyDone = false;
  /** The `error` object text of an in-band error frame, when one arrived. */
  inBandError: string | undefined = undefined;
  private readonly alias: string;
  private readonly dropUsageChunk: boolean;
  private readonly options: OpenAIResponseOptions | undefined;
  private dropping = false;

  /**
   * @param alias the caller's model alias, written into every chunk
   * @param dropUsageChunk drop the trailing usage-only chunk (the caller did not ask for it)
   * @param options how the provider key says its upstream answers (reasoning field, end marker)
   */
  constructor(alias: string, dropUsageChunk: boolean, options?: OpenAIResponseOptions) {
    this.alias = alias;
    this.dropUsageChunk = dropUsageChunk;
    this.options = options;
  }

  /** The upstream ended: whether its stream is complete (`required` keys need `[DONE]`). */
  get complete(): boolean {
    if (this.sawDone) return true;
    return this.sawFinish && this.options?.doneMarker !== 'required';
  }

  /** Returns the text to forward for one line (with its terminator), or '' to drop it. */
  line(line: string): string {
    if (line.length === 0) {
      if (this.dropping) {
        this.dropping = false;
        return '';
      }
      return '\n';
    }
    if (!line.startsWith('data:')) return this.dropping ? '' : line + '\n';
    const start = line.charCodeAt(5) === 32 ? 6 : 5;
    if (line.charCodeAt(start) !== 123) {
      if (line.startsWith('[DONE]', start)) {
        if (!this.sawChoice) {
          this.emptyDone = true;
          return '';
        }
        this.sawDone = true;
      }
      return line + '\n';
    }
    let payload = line.slice(start);
    if (payload.startsWith('{"error"') && errorFrame(payload)) {
      this.inBandError = payload;
      return line + '\n';
    }
    // Only a key naming another reasoning field pays for a parse, and only on chunks naming it.
    if (this.options?.reasoningPath !== undefined) payload = liftReasoningText(payload, this.options, 'delta');
    // One scan for usage; most chunks carry `"usage":null` or nothing.
    const u = payload.indexOf('"usage":');
    if (u >= 0 && payload.charCodeAt(payload.charCodeAt(u + 8) === 32 ? u + 9 : u + 8) === 123) {
      const usage = scanUsage(payload);
      if (usage !== undefined) {
        this.usage = usage;
        if (this.dropUsageChunk && /"choices"\s*:\s*\[\s*\]/.test(payload)) {
          this.dropping = true;
          return '';
        }
      }
    }
    if (!this.sawChoice && CHOICE.test(payload)) this.sawChoice = true;
    if (!this.sawFinish && namesFinishReason(payload)) this.sawFinish = true;
    payload = replaceTopLevelString(payload, 'model', this.alias);
    return 'data: ' + payload + '\n';
  }
}

/** Whether a chunk's text has a `"finish_reason"` with a string value (whitespace allowed around the colon). */
function namesFinishReason(payload: string): boolean {
  for (let k = payload.indexOf('"finish_reason"'); k >= 0; k = payload.indexOf('"finish_reason"', k + 15)) {
    let i = k + 15;
    while (isJsonSpace(payload.charCodeAt(i))) i++;
    if (payload.charCodeAt(i) !== 58) continue; // :
    i++;
    while (isJsonSpace(payload.charCodeAt(i))) i++;
    if (payload.charCodeAt(i) === 34) return true; // "
  }
  return false;
}

/** A `choices` list with a first element (`"choices":[]`, the usage-only chunk's, has none). */
const CHOICE = /"choices"\s*:\s*\[\s*[^\s\]]/;

const NO_FINISH_REASON = { type: 'upstream_decode', message: 'upstream stream ended without a finish reason' };

/**
 * Translated path, upstream side: an OpenAI-family event stream as canonical chunk objects
 * (used when the caller speaks another protocol). Structurally a StreamDecoder.
 */
export class OpenAIChatStreamDecoder {
  usage: CanonicalUsage | undefined = undefined;
  finished = false;
  error: StreamError | undefined = undefined;
  /** A choice reached its finish_reason: a stream ending without `[DONE]` after it is complete. */
  private finishSeen = false;
  private readonly options: OpenAIResponseOptions | undefined;

  /** @param options how the provider key says its upstream answers (reasoning field, end marker) */
  constructor(options?: OpenAIResponseOptions) {
    this.options = options;
  }

  complete(): Record<string, unknown>[] | undefined {
    // A key whose upstream always ends with `[DONE]`: without it the stream was cut short.
    if (!this.finishSeen || this.options?.doneMarker === 'required') return undefined;
    this.finished = true;
    return [];
  }

  push(event: { event: string | undefined; data: string }): Record<string, unknown>[] {
    const data = event.data;
    if (data.startsWith('[DONE]')) {
      // The end marker without a finish reason ends a response that never finished: the caller
      // gets an error frame rather than a clean end its SDK cannot complete.
      if (this.finishSeen) this.finished = true;
      else this.error = NO_FINISH_REASON;
      return [];
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      this.error = { type: 'upstream_decode', message: 'upstream sent a stream event that is not JSON' };
      return [];
    }
    if (chunk === null || typeof chunk !== 'object' || Array.isArray(chunk)) return [];
    const c = chunk as Record<string, unknown>;
    if (event.event === 'error' || reportsError(c.error)) {
      const e = c.error as Record<string, unknown> | undefined;
      this.error = {
        type: typeof e?.type === 'string' ? e.type : 'api_error',
        message: typeof e?.message === 'string' ? e.message : 'upstream stream error',
        status: inBandErrorStatus(e),
      };
      return [];
    }
    if (c.usage !== null && typeof c.usage === 'object') this.usage = c.usage as CanonicalUsage;
    const path = this.options?.reasoningPath;
    if (path !== undefined) liftReasoning(c, path, 'delta');
    if (!this.finishSeen && Array.isArray(c.choices)) {
      this.finishSeen = (c.choices as { finish_reason?: unknown }[]).some((ch) => typeof ch?.finish_reason === 'string');
    }
    return [c];
  }
}

/**
 * Translated path, caller side: canonical chunk objects as an OpenAI Chat Completions event
 * stream with the caller's alias; the usage-only chunk is kept only when the caller asked for it.
 */
export class OpenAIChatStreamEncoder {
  private readonly alias: string;
  private readonly wantUsage: boolean;

  constructor(alias: string, wantUsage: boolean) {
    this.alias = alias;
    this.wantUsage = wantUsage;
  }

  push(chunk: Record<string, unknown>): string {
    const choices = chunk.choices;
    if (!this.wantUsage && Array.isArray(choices) && choices.length === 0) return '';
    return `data: ${JSON.stringify({ ...chunk, model: this.alias })}\n\n`;
  }

  end(): string {
    return 'data: [DONE]\n\n';
  }
}

/** A chunk that starts with an `error` member is an error frame unless that member says "none". */
function errorFrame(payload: string): boolean {
  try {
    return reportsError((JSON.parse(payload) as { error?: unknown }).error);
  } catch {
    return true;
  }
}
