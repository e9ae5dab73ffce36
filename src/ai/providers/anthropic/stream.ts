// Anthropic Messages SSE events → canonical `chat.completion.chunk` objects, one event at a time.
// Usage arrives in two halves (input and cache counts in `message_start`, output and possibly
// updated input counts in `message_delta`); the latest value of each field wins.
import type { CanonicalUsage, SseEvent, StreamDecoder, StreamError } from '../contract.ts';
import { canonicalUsage, finishReason } from './decode.ts';
import type { AnthropicWireUsage } from './decode.ts';
import { inBandErrorStatus } from '../../../lib/in-band-status.ts';

type Json = Record<string, unknown>;

const USAGE_FIELDS = ['input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens'] as const;

function isObject(v: unknown): v is Json {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

export class AnthropicStreamDecoder implements StreamDecoder {
  private done = false;
  private failure: StreamError | undefined = undefined;
  private currentUsage: CanonicalUsage | undefined = undefined;
  private id = '';
  private model = '';
  private readonly created: number;
  private readonly wireUsage: AnthropicWireUsage = {};
  /** Content-block index → tool-call index, for `tool_use` blocks only (server tools are not surfaced). */
  private readonly toolIndex = new Map<number, number>();
  /** Tool-use blocks (Anthropic index) that have sent no argument text yet. */
  private readonly toolsWithoutArguments = new Set<number>();
  /** A message_delta carried the stop reason: a stream ending without message_stop after it is complete. */
  private stopSeen = false;

  constructor(createdSeconds = Math.floor(Date.now() / 1000)) {
    this.created = createdSeconds;
  }

  get finished(): boolean {
    return this.done;
  }

  complete(): Record<string, unknown>[] | undefined {
    return this.stopSeen && !this.done && this.failure === undefined ? this.stop() : undefined;
  }

  /** The message is over: the usage-only chunk, when usage was reported. */
  private stop(): Record<string, unknown>[] {
    this.done = true;
    if (this.currentUsage === undefined) return [];
    return [{ id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model, choices: [], usage: this.currentUsage }];
  }

  get error(): StreamError | undefined {
    return this.failure;
  }

  get usage(): CanonicalUsage | undefined {
    return this.currentUsage;
  }

  push(event: SseEvent): Record<string, unknown>[] {
    if (this.done || this.failure !== undefined || event.event === 'ping') return [];
    let parsed: unknown;
    try {
      parsed = JSON.parse(event.data);
    } catch {
      parsed = undefined;
    }
    if (!isObject(parsed)) {
      this.failure = { type: 'upstream_decode', message: 'upstream stream event data is not a JSON object' };
      return [];
    }
    const type = typeof parsed.type === 'string' ? parsed.type : event.event;
    switch (type) {
      case 'message_start': {
        const message = isObject(parsed.message) ? parsed.message : {};
        if (typeof message.id === 'string') this.id = message.id;
        if (typeof message.model === 'string') this.model = message.model;
        this.mergeUsage(message.usage);
        return [this.chunk({ role: 'assistant', content: '' }, null)];
      }
      case 'content_block_start':
        return this.blockStart(parsed);
      case 'content_block_delta':
        return this.blockDelta(parsed);
      case 'content_block_stop':
        return this.blockStop(parsed);
      case 'message_delta': {
        this.mergeUsage(parsed.usage);
        const delta = isObject(parsed.delta) ? parsed.delta : {};
        if (typeof delta.stop_reason === 'string') this.stopSeen = true;
        return [this.chunk({}, finishReason(delta.stop_reason))];
      }
      case 'message_stop':
        // message_stop without a stop reason ends a message that never finished: the caller gets
        // an error frame rather than a clean end its SDK cannot complete.
        if (!this.stopSeen) {
          this.failure = { type: 'upstream_decode', message: 'upstream stream ended without a stop reason' };
          return [];
        }
        return this.stop();
      case 'error': {
        const e = isObject(parsed.error) ? parsed.error : {};
        this.failure = {
          type: typeof e.type === 'string' ? e.type : 'api_error',
          message: typeof e.message === 'string' ? e.message : 'upstream sent an error event',
          status: inBandErrorStatus(e),
        };
        return [];
      }
      default:
        // ping and event types added later carry nothing canonical.
        return [];
    }
  }

  private blockStart(parsed: Json): Record<string, unknown>[] {
    const block = parsed.content_block;
    if (!isObject(block)) return [];
    if (block.type === 'tool_use' && typeof parsed.index === 'number') {
      const k = this.toolIndex.size;
      this.toolIndex.set(parsed.index, k);
      this.toolsWithoutArguments.add(parsed.index);
      return [this.chunk({ tool_calls: [{ index: k, id: block.id, type: 'function', function: { name: block.name, arguments: '' } }] }, null)];
    }
    // Text and thinking blocks open empty; their text comes as deltas.
    if (block.type === 'text' && typeof block.text === 'string' && block.text !== '') return [this.chunk({ content: block.text }, null)];
    if (block.type === 'thinking' && typeof block.thinking === 'string' && block.thinking !== '') {
      return [this.chunk({ reasoning_content: block.thinking }, null)];
    }
    return [];
  }

  private blockDelta(parsed: Json): Record<string, unknown>[] {
    const delta = parsed.delta;
    if (!isObject(delta)) return [];
    switch (delta.type) {
      case 'text_delta':
        return typeof delta.text === 'string' ? [this.chunk({ content: delta.text }, null)] : [];
      case 'thinking_delta':
        return typeof delta.thinking === 'string' ? [this.chunk({ reasoning_content: delta.thinking }, null)] : [];
      case 'input_json_delta': {
        const k = typeof parsed.index === 'number' ? this.toolIndex.get(parsed.index) : undefined;
        if (k === undefined || typeof delta.partial_json !== 'string' || delta.partial_json === '') return [];
        this.toolsWithoutArguments.delete(parsed.index as number);
        return [this.chunk({ tool_calls: [{ index: k, function: { arguments: delta.partial_json } }] }, null)];
      }
      default:
        // signature_delta, citations_delta
        return [];
    }
  }

  /**
   * A tool-use block that closes without argument text was a call with no arguments: OpenAI sends
   * `"{}"` for those (as the non-streaming translation does), and SDKs parse it.
   */
  private blockStop(parsed: Json): Record<string, unknown>[] {
    if (typeof parsed.index !== 'number' || !this.toolsWithoutArguments.delete(parsed.index)) return [];
    const k = this.toolIndex.get(parsed.index)!;
    return [this.chunk({ tool_calls: [{ index: k, function: { arguments: '{}' } }] }, null)];
  }

  private chunk(delta: Json, finish: string | null): Json {
    return {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model,
      choices: [{ index: 0, delta, finish_reason: finish }],
    };
  }

  private mergeUsage(u: unknown): void {
    if (!isObject(u)) return;
    const w = this.wireUsage;
    let changed = false;
    for (const field of USAGE_FIELDS) {
      const v = u[field];
      if (typeof v === 'number') {
        w[field] = v;
        changed = true;
      }
    }
    const details = u.output_tokens_details;
    if (isObject(details) && typeof details.thinking_tokens === 'number') {
      w.output_tokens_details = { thinking_tokens: details.thinking_tokens };
      changed = true;
    }
    if (changed) this.currentUsage = canonicalUsage(w);
  }
}
