// Caller codecs: what the dispatch core needs to know about the protocol a caller speaks —
// its error envelope, how its request becomes canonical (OpenAI chat), how canonical answers
// are rendered back, and how the native path relays an upstream that speaks it already.
import type { GatewayError } from '../../lib/errors.ts';
import type { CanonicalUsage } from '../protocols/canonical.ts';
import { openAIErrorBody, openAIStreamErrorFrame, scanUsage } from '../protocols/openai-chat.ts';
import { OpenAIChatStreamEncoder, OpenAIChatStreamRelay } from '../protocols/openai-chat-stream.ts';
import { completionAsChunks } from '../protocols/openai-chat-as-stream.ts';
import type { WireProtocol } from '../providers/contract.ts';
import { liftReasoningText, type OpenAIResponseOptions } from '../protocols/openai-response-options.ts';
import { findTopLevelMember } from '../../lib/json-scan.ts';

/** Canonical chunks → the caller's event stream text. */
export interface StreamEncoder {
  push(chunk: Record<string, unknown>): string;
  /** Text that completes the caller's stream once the upstream finished. */
  end(): string;
}

/** A native line relay (upstream and caller speak the same protocol). */
export interface NativeRelay {
  /** Text to forward for one upstream line (with its terminator), '' to drop it. */
  line(line: string): string;
  /** At upstream end: the text still to write, and whether the response was complete. */
  finish(): { text: string; complete: boolean };
  readonly usage: CanonicalUsage | undefined;
  /** The upstream sent an in-band error event (it has been relayed). */
  readonly inBandError: boolean;
  /** Translated streams: why the upstream's stream could not be read (no error frame written yet). */
  readonly decodeError?: string;
  /**
   * Translated streams: the status of the upstream's in-band error, read from the upstream's own
   * error (the frame the caller gets is re-encoded, and may not name it).
   */
  readonly inBandStatus?: number;
  /** Nothing after an in-band error is relayed (translated streams): the stream ends with its frame. */
  readonly stopsAtError?: boolean;
}

export interface CallerCodec {
  readonly protocol: WireProtocol;
  /**
   * The response header this protocol's SDK reads its request id from (`_request_id`,
   * `error.request_id` / `requestID`): the gateway's request id goes there too, so a caller's
   * logged id is the one the access log and usage events carry.
   */
  readonly requestIdHeader: string;
  errorBody(err: GatewayError): unknown;
  streamErrorFrame(err: GatewayError): string;
  toCanonical(request: Record<string, unknown>): Record<string, unknown>;
  renderJson(canonical: Record<string, unknown>, alias: string): string;
  createEncoder(alias: string, wantUsage: boolean): StreamEncoder;
  /**
   * Native JSON answer: the body with the alias spliced in, or undefined if it is not an object.
   * `upstream` is how an OpenAI-family upstream answers (the messages codec has no use for it).
   */
  nativeJson(text: string, alias: string, upstream?: OpenAIResponseOptions): { body: string; usage: CanonicalUsage | undefined } | undefined;
  createNativeRelay(alias: string, dropUsage: boolean, upstream?: OpenAIResponseOptions): NativeRelay;
  /**
   * A whole answer in this protocol (the JSON body the caller would get) as the caller's complete
   * event stream, for an upstream that answered a stream request with JSON. Undefined when the
   * body is not an answer of this protocol.
   */
  answerAsStream(body: string, alias: string, wantUsage: boolean): string | undefined;
}

/** `text` parsed when it is a JSON object, else undefined. */
export function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Replace a top-level string member without re-serialising the rest; undefined if not an object. */
export function spliceModel(text: string, alias: string): string | undefined {
  const model = findTopLevelMember(text, 'model');
  if (model === undefined) return parseObject(text) === undefined ? undefined : text;
  if (text.charCodeAt(model.start) !== 34) return text;
  return text.slice(0, model.start) + JSON.stringify(alias) + text.slice(model.end);
}

class OpenAINativeRelay implements NativeRelay {
  private readonly relay: OpenAIChatStreamRelay;
  /**
   * Per choice index, whether it finished; kept only when asked for (completions, where `n` and a
   * list of prompts make several choices common): a stream that ends without its `[DONE]` is then
   * complete only if every choice finished. It costs a parse per chunk, which chat does not pay.
   */
  private readonly choices: Map<number, boolean> | undefined;

  constructor(alias: string, dropUsage: boolean, upstream: OpenAIResponseOptions | undefined, perChoice: boolean) {
    this.relay = new OpenAIChatStreamRelay(alias, dropUsage, upstream);
    this.choices = perChoice ? new Map() : undefined;
  }

  line(line: string): string {
    if (this.choices !== undefined && line.startsWith('data:')) trackChoices(line, this.choices);
    return this.relay.line(line);
  }

  finish(): { text: string; complete: boolean } {
    if (this.relay.sawDone) return { text: '', complete: true };
    // `[DONE]` with no choice before it: no answer was given (the caller gets an error frame).
    if (this.relay.emptyDone) return { text: '', complete: false };
    // A finished response without the end marker: complete it for the caller.
    const finished = this.relay.complete && (this.choices === undefined || [...this.choices.values()].every(Boolean));
    return finished ? { text: 'data: [DONE]\n\n', complete: true } : { text: '', complete: false };
  }

  get usage(): CanonicalUsage | undefined {
    return this.relay.usage;
  }

  get inBandError(): boolean {
    return this.relay.inBandError !== undefined;
  }
}

/** Record, per choice index of one `data:` line's chunk, whether it finished. */
function trackChoices(line: string, choices: Map<number, boolean>): void {
  const chunk = parseObject(line.slice(line.charCodeAt(5) === 32 ? 6 : 5));
  if (chunk === undefined || !Array.isArray(chunk.choices)) return;
  chunk.choices.forEach((c: unknown, i: number) => {
    if (c === null || typeof c !== 'object') return;
    const choice = c as Record<string, unknown>;
    const index = typeof choice.index === 'number' ? choice.index : i;
    if (typeof choice.finish_reason === 'string') choices.set(index, true);
    else if (!choices.has(index)) choices.set(index, false);
  });
}

/** The native relay of an OpenAI-family stream; `perChoice`: judge completeness choice by choice. */
export function openAINativeRelay(alias: string, dropUsage: boolean, upstream: OpenAIResponseOptions | undefined, perChoice = false): NativeRelay {
  return new OpenAINativeRelay(alias, dropUsage, upstream, perChoice);
}

export const openAIChatCodec: CallerCodec = {
  protocol: 'openai-chat',
  requestIdHeader: 'x-request-id',
  errorBody: openAIErrorBody,
  streamErrorFrame: openAIStreamErrorFrame,
  toCanonical: (request) => request,
  renderJson: (canonical, alias) => JSON.stringify({ ...canonical, model: alias }),
  createEncoder: (alias, wantUsage) => new OpenAIChatStreamEncoder(alias, wantUsage),
  nativeJson(text, alias, upstream) {
    const answer = upstream?.reasoningPath === undefined ? text : liftReasoningText(text, upstream, 'message');
    const body = spliceModel(answer, alias);
    return body === undefined ? undefined : { body, usage: scanUsage(answer) };
  },
  createNativeRelay: (alias, dropUsage, upstream) => new OpenAINativeRelay(alias, dropUsage, upstream, false),
  answerAsStream(body, alias, wantUsage) {
    const completion = parseObject(body);
    const chunks = completion === undefined ? undefined : completionAsChunks(completion);
    return chunks === undefined ? undefined : openAIStreamText(chunks, alias, wantUsage);
  },
};

/** OpenAI-family chunks as the caller's whole event stream, with its alias, ending in `[DONE]`. */
export function openAIStreamText(chunks: readonly Record<string, unknown>[], alias: string, wantUsage: boolean): string {
  const encoder = new OpenAIChatStreamEncoder(alias, wantUsage);
  let out = '';
  for (const chunk of chunks) out += encoder.push(chunk);
  return out + encoder.end();
}
