// Anthropic Messages response → canonical `chat.completion`, and the pieces the stream decoder
// shares with it (stop reasons, usage).
import { anthropicUsageToCanonical } from '../../protocols/anthropic-messages.ts';
import type { AnthropicUsage } from '../../protocols/anthropic-messages.ts';
import type { CanonicalUsage } from '../contract.ts';

type Json = Record<string, unknown>;

/** Anthropic usage with the reasoning share of the output (`output_tokens_details.thinking_tokens`). */
export interface AnthropicWireUsage extends AnthropicUsage {
  output_tokens_details?: { thinking_tokens?: number } | null;
}

/** Anthropic `stop_reason` → OpenAI `finish_reason`. */
export function finishReason(stopReason: unknown): string {
  switch (stopReason) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'refusal':
      return 'content_filter';
    default:
      // end_turn, stop_sequence, pause_turn (a server tool paused the turn), null, unknown
      return 'stop';
  }
}

/** Anthropic usage → canonical, with thinking tokens as `completion_tokens_details.reasoning_tokens`. */
export function canonicalUsage(u: AnthropicWireUsage | undefined): CanonicalUsage | undefined {
  const out = anthropicUsageToCanonical(u);
  const thinking = u?.output_tokens_details?.thinking_tokens;
  if (out !== undefined && typeof thinking === 'number') out.completion_tokens_details = { reasoning_tokens: thinking };
  return out;
}

function isObject(v: unknown): v is Json {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Anthropic message JSON text → canonical `chat.completion`, or an Error when it is not a message. */
export function decodeAnthropicResponse(text: string, nowSeconds = Math.floor(Date.now() / 1000)): Record<string, unknown> | Error {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return new Error('upstream returned a body that is not JSON');
  }
  if (!isObject(parsed) || !Array.isArray(parsed.content) || (parsed.type !== undefined && parsed.type !== 'message')) {
    if (isObject(parsed) && parsed.type === 'error' && isObject(parsed.error) && typeof parsed.error.message === 'string') {
      return new Error(`upstream returned an error body: ${parsed.error.message}`);
    }
    return new Error('upstream returned a body that is not an Anthropic message');
  }
  let content: string | null = null;
  let reasoning: string | undefined;
  const toolCalls: Json[] = [];
  for (const block of parsed.content as unknown[]) {
    if (!isObject(block)) continue;
    if (block.type === 'text' && typeof block.text === 'string') content = (content ?? '') + block.text;
    else if (block.type === 'thinking' && typeof block.thinking === 'string') reasoning = (reasoning ?? '') + block.thinking;
    else if (block.type === 'tool_use') {
      toolCalls.push({
        id: block.id,
        type: 'function',
        function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) },
      });
    }
    // redacted_thinking and server-tool blocks have no canonical form.
  }
  const message: Json = { role: 'assistant', content, refusal: null };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  if (reasoning !== undefined) message.reasoning_content = reasoning;
  const out: Json = {
    id: parsed.id,
    object: 'chat.completion',
    created: nowSeconds,
    model: parsed.model,
    choices: [{ index: 0, message, finish_reason: finishReason(parsed.stop_reason), logprobs: null }],
  };
  const usage = canonicalUsage(isObject(parsed.usage) ? (parsed.usage as AnthropicWireUsage) : undefined);
  if (usage !== undefined) out.usage = usage;
  return out;
}
