// The bridge between a caller speaking Anthropic Messages and the canonical protocol (OpenAI Chat
// Completions) the translated path runs on: Messages request → chat request, chat.completion →
// Messages response, and usage both ways.
//
// What cannot cross, and is dropped: assistant `thinking`/`redacted_thinking` history (its
// signatures mean nothing to another vendor), Anthropic server tools and Anthropic-defined tools
// (web search, bash, text editor: they carry no JSON schema), `top_k`, `cache_control` marks,
// `citations`, and block types other vendors have no counterpart for. Images inside a tool result
// move into the user turn that follows the tool messages (chat `tool` messages carry text only).
// A stop caused by a stop sequence cannot be told from a natural stop, so it reads `end_turn`.
import { createHash, randomUUID } from 'node:crypto';
import { GatewayError } from '../../lib/errors.ts';
import type { AnthropicUsage, CanonicalUsage, ContentBlock, MessagesRequest } from './anthropic-messages.ts';

type Obj = Record<string, unknown>;

const isObject = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/**
 * `thinking.budget_tokens` → `reasoning_effort`: the inverse of the gateway's effort → budget
 * table (low 1024, medium 2048, high 4096, xhigh 8192, max 16384); a budget maps to the smallest
 * effort whose budget covers it.
 */
export function budgetToEffort(budget: number): string {
  if (budget <= 1024) return 'low';
  if (budget <= 2048) return 'medium';
  if (budget <= 4096) return 'high';
  if (budget <= 8192) return 'xhigh';
  return 'max';
}

function textOf(blocks: unknown[], sep: string): string {
  let out = '';
  let first = true;
  for (const b of blocks) {
    if (isObject(b) && b.type === 'text' && typeof b.text === 'string') {
      out += first ? b.text : sep + b.text;
      first = false;
    }
  }
  return out;
}

function systemText(system: unknown): string | undefined {
  if (typeof system === 'string') return system.length > 0 ? system : undefined;
  if (Array.isArray(system)) {
    const t = textOf(system, '\n\n');
    return t.length > 0 ? t : undefined;
  }
  return undefined;
}

function imagePart(source: unknown, path: string): Obj {
  if (isObject(source)) {
    if (source.type === 'base64' && typeof source.data === 'string') {
      return { type: 'image_url', image_url: { url: `data:${str(source.media_type) ?? 'image/png'};base64,${source.data}` } };
    }
    if (source.type === 'url' && typeof source.url === 'string') return { type: 'image_url', image_url: { url: source.url } };
  }
  throw new GatewayError('invalid_request', `'${path}.source' must be a base64 or url image source for this model`, {
    param: `${path}.source`,
    publicCode: null,
  });
}

/** A document block → chat content parts (a file part, or text for text sources). */
function documentParts(block: ContentBlock, path: string): Obj[] {
  const source = block.source;
  if (isObject(source)) {
    if (source.type === 'base64' && typeof source.data === 'string') {
      const file: Obj = { file_data: `data:${str(source.media_type) ?? 'application/pdf'};base64,${source.data}` };
      if (typeof block.title === 'string') file.filename = block.title;
      return [{ type: 'file', file }];
    }
    if (source.type === 'text' && typeof source.data === 'string') return [{ type: 'text', text: source.data }];
    if (source.type === 'content') {
      if (typeof source.content === 'string') return [{ type: 'text', text: source.content }];
      if (Array.isArray(source.content)) return [{ type: 'text', text: textOf(source.content, '\n') }];
    }
  }
  throw new GatewayError('invalid_request', `'${path}.source' must be a base64, text or content document source for this model`, {
    param: `${path}.source`,
    publicCode: null,
  });
}

/** Chat content for a list of parts: a plain string when every part is text. */
function partsContent(parts: Obj[]): string | Obj[] {
  if (parts.every((p) => p.type === 'text')) return parts.map((p) => p.text as string).join('\n');
  return parts;
}

function toolResultText(content: unknown, images: Obj[], path: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  for (let k = 0; k < content.length; k++) {
    const b = content[k];
    if (isObject(b) && b.type === 'image') images.push(imagePart(b.source, `${path}[${k}]`));
  }
  return textOf(content, '\n');
}

function userTurn(content: ContentBlock[], i: number, out: Obj[]): void {
  const parts: Obj[] = [];
  const toolImages: Obj[] = [];
  for (let j = 0; j < content.length; j++) {
    const b = content[j];
    const path = `messages[${i}].content[${j}]`;
    switch (b.type) {
      case 'text':
        if (typeof b.text === 'string') parts.push({ type: 'text', text: b.text });
        break;
      case 'image':
        parts.push(imagePart(b.source, path));
        break;
      case 'document':
        for (const part of documentParts(b, path)) parts.push(part);
        break;
      case 'tool_result':
        // Chat requires tool messages right after the assistant turn that called the tools.
        out.push({ role: 'tool', tool_call_id: str(b.tool_use_id) ?? '', content: toolResultText(b.content, toolImages, `${path}.content`) });
        break;
      default:
        break;
    }
  }
  const all = toolImages.length > 0 ? [...toolImages, ...parts] : parts;
  if (all.length > 0) out.push({ role: 'user', content: partsContent(all) });
}

function assistantTurn(content: ContentBlock[], out: Obj[]): void {
  let text = '';
  const toolCalls: Obj[] = [];
  for (const b of content) {
    if (b.type === 'text' && typeof b.text === 'string') text += b.text;
    else if (b.type === 'tool_use') {
      toolCalls.push({
        id: str(b.id) ?? '',
        type: 'function',
        function: { name: str(b.name) ?? '', arguments: JSON.stringify(b.input ?? {}) },
      });
    }
  }
  const msg: Obj = { role: 'assistant', content: text.length === 0 && toolCalls.length > 0 ? null : text };
  if (toolCalls.length > 0) msg.tool_calls = toolCalls;
  out.push(msg);
}

function convertTools(tools: unknown[]): Obj[] {
  const out: Obj[] = [];
  for (const t of tools) {
    // Custom tools have no type (or `custom`); typed ones are Anthropic-defined and schemaless.
    if (!isObject(t) || (t.type !== undefined && t.type !== 'custom') || typeof t.name !== 'string') continue;
    const fn: Obj = { name: t.name };
    if (typeof t.description === 'string') fn.description = t.description;
    fn.parameters = isObject(t.input_schema) ? t.input_schema : { type: 'object', properties: {} };
    out.push({ type: 'function', function: fn });
  }
  return out;
}

function convertToolChoice(tc: Obj): unknown {
  switch (tc.type) {
    case 'auto':
      return 'auto';
    case 'any':
      return 'required';
    case 'none':
      return 'none';
    case 'tool':
      return typeof tc.name === 'string' ? { type: 'function', function: { name: tc.name } } : undefined;
    default:
      return undefined;
  }
}

/** A checked Messages request → the canonical chat completions request. */
export function messagesRequestToChat(req: MessagesRequest): Record<string, unknown> {
  const messages: Obj[] = [];
  const sys = systemText(req.system);
  if (sys !== undefined) messages.push({ role: 'system', content: sys });
  for (let i = 0; i < req.messages.length; i++) {
    const m = req.messages[i];
    if (m.role === 'system') {
      const t = systemText(m.content);
      if (t !== undefined) messages.push({ role: 'system', content: t });
    } else if (typeof m.content === 'string') {
      messages.push({ role: m.role, content: m.content });
    } else if (m.role === 'user') {
      userTurn(m.content, i, messages);
    } else {
      assistantTurn(m.content, messages);
    }
  }

  const chat: Obj = { model: req.model, messages, max_tokens: req.max_tokens };
  if (typeof req.temperature === 'number') chat.temperature = req.temperature;
  if (typeof req.top_p === 'number') chat.top_p = req.top_p;
  if (Array.isArray(req.stop_sequences) && req.stop_sequences.length > 0) chat.stop = req.stop_sequences;
  if (isObject(req.metadata) && typeof req.metadata.user_id === 'string') chat.user = chatUser(req.metadata.user_id);
  if (req.stream === true) {
    chat.stream = true;
    chat.stream_options = { include_usage: true };
  }

  const tools = Array.isArray(req.tools) ? convertTools(req.tools) : [];
  if (tools.length > 0) {
    chat.tools = tools;
    if (isObject(req.tool_choice)) {
      const choice = convertToolChoice(req.tool_choice);
      if (choice !== undefined) chat.tool_choice = choice;
      if (req.tool_choice.disable_parallel_tool_use === true) chat.parallel_tool_calls = false;
    }
  }

  // An explicit effort wins over a thinking budget.
  const effort = isObject(req.output_config) ? str(req.output_config.effort) : undefined;
  if (effort !== undefined) chat.reasoning_effort = effort;
  else if (isObject(req.thinking)) {
    if (req.thinking.type === 'enabled' && typeof req.thinking.budget_tokens === 'number') {
      chat.reasoning_effort = budgetToEffort(req.thinking.budget_tokens);
    } else if (req.thinking.type === 'adaptive') {
      chat.reasoning_effort = 'medium';
    }
  }
  const format = isObject(req.output_config) ? req.output_config.format : undefined;
  if (isObject(format) && format.type === 'json_schema' && isObject(format.schema)) {
    chat.response_format = { type: 'json_schema', json_schema: { name: 'output', schema: format.schema, strict: true } };
  }
  return chat;
}

/** Canonical usage → Messages usage (`input_tokens` excludes cache reads and writes). */
export function canonicalUsageToAnthropic(u: CanonicalUsage | undefined): AnthropicUsage & { output_tokens_details?: { thinking_tokens: number } } {
  const prompt = u?.prompt_tokens ?? 0;
  const read = u?.prompt_tokens_details?.cached_tokens;
  const write = u?.prompt_tokens_details?.cache_creation_tokens;
  const out: AnthropicUsage & { output_tokens_details?: { thinking_tokens: number } } = {
    input_tokens: Math.max(0, prompt - (read ?? 0) - (write ?? 0)),
    output_tokens: u?.completion_tokens ?? 0,
  };
  if (read !== undefined) out.cache_read_input_tokens = read;
  if (write !== undefined) out.cache_creation_input_tokens = write;
  const reasoning = u?.completion_tokens_details?.reasoning_tokens;
  if (typeof reasoning === 'number') out.output_tokens_details = { thinking_tokens: reasoning };
  return out;
}

/** Chat `finish_reason` → Messages `stop_reason`. */
export function finishToStopReason(finish: unknown): string {
  switch (finish) {
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
    case 'function_call':
      return 'tool_use';
    case 'content_filter':
      return 'refusal';
    default:
      return 'end_turn';
  }
}

/** A Messages id for a chat id: `msg_`-prefixed. */
export function messageId(chatId: unknown): string {
  if (typeof chatId !== 'string' || chatId.length === 0) return 'msg_' + randomUUID().replaceAll('-', '');
  return chatId.startsWith('msg_') ? chatId : 'msg_' + chatId;
}

function parseArguments(args: unknown): unknown {
  if (isObject(args)) return args;
  if (typeof args !== 'string' || args.length === 0) return {};
  try {
    const v: unknown = JSON.parse(args);
    return isObject(v) ? v : {};
  } catch {
    return {};
  }
}

function chatText(content: unknown): string {
  if (typeof content === 'string') return content;
  return Array.isArray(content) ? textOf(content, '') : '';
}

/** A canonical `chat.completion` → a Messages response carrying the caller's alias. */
export function chatResponseToMessages(chat: Record<string, unknown>, alias: string): Record<string, unknown> {
  const choice = Array.isArray(chat.choices) && isObject(chat.choices[0]) ? chat.choices[0] : {};
  const msg = isObject(choice.message) ? choice.message : {};
  const content: Obj[] = [];
  if (typeof msg.reasoning_content === 'string' && msg.reasoning_content.length > 0) {
    content.push({ type: 'thinking', thinking: msg.reasoning_content, signature: '' });
  }
  const text = chatText(msg.content) || (str(msg.refusal) ?? '');
  if (text.length > 0) content.push({ type: 'text', text });
  if (Array.isArray(msg.tool_calls)) {
    for (const tc of msg.tool_calls) {
      if (!isObject(tc)) continue;
      const fn = isObject(tc.function) ? tc.function : {};
      content.push({ type: 'tool_use', id: str(tc.id) ?? 'toolu_' + randomUUID().replaceAll('-', ''), name: str(fn.name) ?? '', input: parseArguments(fn.arguments) });
    }
  }
  return {
    id: messageId(chat.id),
    type: 'message',
    role: 'assistant',
    model: alias,
    content,
    stop_reason: finishToStopReason(choice.finish_reason),
    stop_sequence: null,
    usage: canonicalUsageToAnthropic(isObject(chat.usage) ? (chat.usage as CanonicalUsage) : undefined),
  };
}

/** Longest `user` OpenAI-family upstreams accept (OpenAI: 64 characters; some others refuse more). */
const MAX_CHAT_USER = 64;

/**
 * `metadata.user_id` as the chat `user`: as is when it fits, else its SHA-256 (64 hex digits), so
 * a long id (Claude Code sends ~150 characters) still attributes requests instead of a 400.
 */
function chatUser(userId: string): string {
  return userId.length <= MAX_CHAT_USER ? userId : createHash('sha256').update(userId).digest('hex');
}
