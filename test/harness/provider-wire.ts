// One model turn rendered in each provider family's wire format (JSON and SSE), so e2e tests can
// script the same answer from an OpenAI-family or an Anthropic-family mock upstream and expect
// the same result at the caller. Shapes follow the providers' documented wire formats.
import type { RecordedRequest, Reply } from './mock-upstream.ts';

export interface ToolCall {
  id: string;
  name: string;
  input: Record<string, unknown>;
}

/** Usage in Anthropic terms: `input` excludes cache reads and writes. */
export interface TurnUsage {
  input: number;
  output: number;
  cacheRead?: number;
  cacheWrite?: number;
}

export interface Turn {
  text?: string;
  reasoning?: string;
  toolCalls?: ToolCall[];
  /** `stop` (default), `tool_calls` (default when toolCalls), `length`. */
  finish?: 'stop' | 'tool_calls' | 'length';
  usage?: TurnUsage;
}

export type Family = 'openai' | 'anthropic';

const DEFAULT_USAGE: TurnUsage = { input: 11, output: 7 };

function finishOf(t: Turn): 'stop' | 'tool_calls' | 'length' {
  return t.finish ?? (t.toolCalls !== undefined && t.toolCalls.length > 0 ? 'tool_calls' : 'stop');
}

function openAIUsage(u: TurnUsage): Record<string, unknown> {
  const prompt = u.input + (u.cacheRead ?? 0) + (u.cacheWrite ?? 0);
  return {
    prompt_tokens: prompt,
    completion_tokens: u.output,
    total_tokens: prompt + u.output,
    prompt_tokens_details: { cached_tokens: u.cacheRead ?? 0 },
  };
}

function anthropicUsage(u: TurnUsage): Record<string, unknown> {
  return {
    input_tokens: u.input,
    output_tokens: u.output,
    cache_read_input_tokens: u.cacheRead ?? 0,
    cache_creation_input_tokens: u.cacheWrite ?? 0,
  };
}

const STOP_REASONS = { stop: 'end_turn', tool_calls: 'tool_use', length: 'max_tokens' } as const;

export function openAIJson(t: Turn, model: string): Record<string, unknown> {
  const message: Record<string, unknown> = { role: 'assistant', content: t.text ?? null, refusal: null };
  if (t.reasoning !== undefined) message.reasoning_content = t.reasoning;
  if (t.toolCalls !== undefined && t.toolCalls.length > 0) {
    message.tool_calls = t.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.input) } }));
  }
  return {
    id: 'chatcmpl-wire0001',
    object: 'chat.completion',
    created: 1_760_000_000,
    model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishOf(t) }],
    usage: openAIUsage(t.usage ?? DEFAULT_USAGE),
  };
}

/** OpenAI chunks, text and arguments split in small pieces, with the usage-only chunk last. */
export function openAIFrames(t: Turn, model: string): object[] {
  const base = { id: 'chatcmpl-wire0001', object: 'chat.completion.chunk', created: 1_760_000_000, model };
  const chunk = (delta: object, finish: string | null = null): object => ({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], usage: null });
  const out: object[] = [chunk({ role: 'assistant', content: '' })];
  for (const piece of split(t.reasoning)) out.push(chunk({ reasoning_content: piece }));
  for (const piece of split(t.text)) out.push(chunk({ content: piece }));
  (t.toolCalls ?? []).forEach((c, index) => {
    out.push(chunk({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] }));
    for (const piece of split(JSON.stringify(c.input))) out.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
  });
  out.push(chunk({}, finishOf(t)));
  out.push({ ...base, choices: [], usage: openAIUsage(t.usage ?? DEFAULT_USAGE) });
  return out;
}

export function anthropicJson(t: Turn, model: string): Record<string, unknown> {
  const content: object[] = [];
  if (t.reasoning !== undefined) content.push({ type: 'thinking', thinking: t.reasoning, signature: 'sig-wire' });
  if (t.text !== undefined) content.push({ type: 'text', text: t.text });
  for (const c of t.toolCalls ?? []) content.push({ type: 'tool_use', id: c.id, name: c.name, input: c.input });
  return {
    id: 'msg_wire0001',
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: STOP_REASONS[finishOf(t)],
    stop_sequence: null,
    usage: anthropicUsage(t.usage ?? DEFAULT_USAGE),
  };
}

function frame(event: string, data: object): string {
  return `event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`;
}

/** Anthropic events, each one its own write. */
export function anthropicFrames(t: Turn, model: string): string[] {
  const u = t.usage ?? DEFAULT_USAGE;
  const out: string[] = [
    frame('message_start', {
      message: {
        id: 'msg_wire0001', type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null,
        usage: { ...anthropicUsage(u), output_tokens: 1 },
      },
    }),
    frame('ping', {}),
  ];
  let index = 0;
  if (t.reasoning !== undefined) {
    out.push(frame('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } }));
    for (const piece of split(t.reasoning)) out.push(frame('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: piece } }));
    out.push(frame('content_block_delta', { index, delta: { type: 'signature_delta', signature: 'sig-wire' } }));
    out.push(frame('content_block_stop', { index }));
    index++;
  }
  if (t.text !== undefined) {
    out.push(frame('content_block_start', { index, content_block: { type: 'text', text: '' } }));
    for (const piece of split(t.text)) out.push(frame('content_block_delta', { index, delta: { type: 'text_delta', text: piece } }));
    out.push(frame('content_block_stop', { index }));
    index++;
  }
  for (const c of t.toolCalls ?? []) {
    out.push(frame('content_block_start', { index, content_block: { type: 'tool_use', id: c.id, name: c.name, input: {} } }));
    for (const piece of split(JSON.stringify(c.input))) out.push(frame('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: piece } }));
    out.push(frame('content_block_stop', { index }));
    index++;
  }
  out.push(frame('message_delta', { delta: { stop_reason: STOP_REASONS[finishOf(t)], stop_sequence: null }, usage: { output_tokens: u.output } }));
  out.push(frame('message_stop', {}));
  return out;
}

/** Pieces of about 5 characters, so every relay sees content split across events. */
function split(text: string | undefined): string[] {
  if (text === undefined || text === '') return [];
  const out: string[] = [];
  for (let i = 0; i < text.length; i += 5) out.push(text.slice(i, i + 5));
  return out;
}

/** The family a recorded upstream request was addressed to, from its path. */
export function familyOf(req: RecordedRequest): Family {
  return req.url.includes('/messages') ? 'anthropic' : 'openai';
}

/** A mock reply serving `t` in whichever family the request was sent to (JSON or SSE as asked). */
export function replyFor(t: Turn): (req: RecordedRequest) => Reply {
  return (req) => {
    const stream = req.json?.stream === true;
    const model = typeof req.json?.model === 'string' ? req.json.model : 'upstream-model';
    if (familyOf(req) === 'anthropic') {
      return stream ? { sse: anthropicFrames(t, model), done: false } : { json: anthropicJson(t, model) };
    }
    return stream ? { sse: openAIFrames(t, model) } : { json: openAIJson(t, model) };
  };
}

/** An error reply in the family's envelope. */
export function errorReplyFor(status: number, type: string, message: string, headers?: Record<string, string>): (req: RecordedRequest) => Reply {
  return (req) =>
    familyOf(req) === 'anthropic'
      ? { status, headers, json: { type: 'error', error: { type, message } } }
      : { status, headers, json: { error: { message, type, param: null, code: null } } };
}
