// Encodes canonical chat-completion chunks as an Anthropic Messages event stream, one chunk at a
// time, for a caller speaking Messages to a model on the translated path.
//
// Content blocks are opened in arrival order and closed when the next kind begins: reasoning
// (`reasoning_content`) becomes a thinking block, text a text block, each tool call index a
// tool_use block whose argument fragments are `input_json_delta`s. The closing `message_delta`
// and `message_stop` are written by end(): OpenAI-family upstreams send usage in a chunk after
// the one with the finish reason, and the Messages API reports full usage in `message_delta`.
import { canonicalUsageToAnthropic, finishToStopReason, messageId } from './anthropic-bridge.ts';
import type { CanonicalUsage } from './anthropic-messages.ts';

type Obj = Record<string, unknown>;

const isObject = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

function frame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

export class ChatToMessagesStream {
  private readonly alias: string;
  private started = false;
  private closed = false;
  private nextIndex = 0;
  /** Index of the open content block, or -1. */
  private openIndex = -1;
  private openKind: 'text' | 'thinking' | 'tool' | undefined = undefined;
  /** Chat tool call index → content block index. */
  private readonly toolBlocks = new Map<number, number>();
  private finishReason: unknown = undefined;
  private lastUsage: CanonicalUsage | undefined = undefined;

  /** @param alias the caller's model alias, written into `message_start` */
  constructor(alias: string) {
    this.alias = alias;
  }

  /** Usage from the upstream chunks so far (canonical). */
  get usage(): CanonicalUsage | undefined {
    return this.lastUsage;
  }

  /** A finish reason arrived: the upstream completed its answer. */
  get finished(): boolean {
    return this.finishReason !== undefined;
  }

  /** SSE text for one canonical chunk (possibly ''). */
  push(chunk: Record<string, unknown>): string {
    if (this.closed) return '';
    if (isObject(chunk.usage)) this.lastUsage = chunk.usage as CanonicalUsage;
    let out = '';
    if (!this.started) {
      this.started = true;
      out += this.messageStart(chunk.id);
    }
    const choices = chunk.choices;
    if (!Array.isArray(choices)) return out;
    for (const choice of choices) {
      // Messages has one answer: only the first choice is carried.
      if (!isObject(choice) || (choice.index !== undefined && choice.index !== 0)) continue;
      const delta = isObject(choice.delta) ? choice.delta : undefined;
      if (delta !== undefined) out += this.delta(delta);
      if (choice.finish_reason !== null && choice.finish_reason !== undefined) this.finishReason = choice.finish_reason;
    }
    return out;
  }

  /** Closing frames when the upstream finished; '' otherwise (the caller then writes an error frame). */
  end(): string {
    if (this.closed || this.finishReason === undefined) return '';
    this.closed = true;
    let out = this.closeBlock();
    const usage = canonicalUsageToAnthropic(this.lastUsage);
    out += frame('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: finishToStopReason(this.finishReason), stop_sequence: null },
      usage,
    });
    out += frame('message_stop', { type: 'message_stop' });
    return out;
  }

  private messageStart(id: unknown): string {
    // Input counts are known here only when the upstream reported usage early; the full numbers
    // go in message_delta, which is where clients read the final usage.
    const known = canonicalUsageToAnthropic(this.lastUsage);
    known.output_tokens = 0;
    delete known.output_tokens_details;
    return frame('message_start', {
      type: 'message_start',
      message: {
        id: messageId(id),
        type: 'message',
        role: 'assistant',
        model: this.alias,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: known,
      },
    });
  }

  private delta(delta: Obj): string {
    let out = '';
    const reasoning = delta.reasoning_content;
    if (typeof reasoning === 'string' && reasoning.length > 0) {
      if (this.openKind !== 'thinking') out += this.openBlock('thinking', { type: 'thinking', thinking: '', signature: '' });
      out += frame('content_block_delta', { type: 'content_block_delta', index: this.openIndex, delta: { type: 'thinking_delta', thinking: reasoning } });
    }
    const text = typeof delta.content === 'string' ? delta.content : typeof delta.refusal === 'string' ? delta.refusal : '';
    if (text.length > 0) {
      if (this.openKind !== 'text') out += this.openBlock('text', { type: 'text', text: '' });
      out += frame('content_block_delta', { type: 'content_block_delta', index: this.openIndex, delta: { type: 'text_delta', text } });
    }
    if (Array.isArray(delta.tool_calls)) {
      for (const tc of delta.tool_calls) if (isObject(tc)) out += this.toolCall(tc);
    }
    return out;
  }

  private toolCall(tc: Obj): string {
    let out = '';
    const toolIndex = typeof tc.index === 'number' ? tc.index : 0;
    const fn = isObject(tc.function) ? tc.function : {};
    let index = this.toolBlocks.get(toolIndex);
    if (index === undefined) {
      const id = typeof tc.id === 'string' && tc.id.length > 0 ? tc.id : `toolu_${this.nextIndex}_${toolIndex}`;
      out += this.openBlock('tool', { type: 'tool_use', id, name: typeof fn.name === 'string' ? fn.name : '', input: {} });
      index = this.openIndex;
      this.toolBlocks.set(toolIndex, index);
    }
    // Upstreams send one call's fragments before the next call's; a late fragment for an earlier
    // call still names its own block.
    const args = fn.arguments;
    if (typeof args === 'string' && args.length > 0) {
      out += frame('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: args } });
    }
    return out;
  }

  private openBlock(kind: 'text' | 'thinking' | 'tool', block: Obj): string {
    const out = this.closeBlock();
    this.openIndex = this.nextIndex++;
    this.openKind = kind;
    return out + frame('content_block_start', { type: 'content_block_start', index: this.openIndex, content_block: block });
  }

  private closeBlock(): string {
    if (this.openIndex < 0) return '';
    const index = this.openIndex;
    this.openIndex = -1;
    this.openKind = undefined;
    return frame('content_block_stop', { type: 'content_block_stop', index });
  }
}
