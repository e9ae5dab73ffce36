// Canonical (OpenAI Chat Completions) request → Anthropic Messages request body.
//
// Choices made where the formats do not line up:
// - Every `system` and `developer` message, wherever it stands, moves into the top-level `system`
//   field in conversation order (spec 2 §4.2 delivery table). Anthropic has no system role inside
//   `messages`; turning a late system message into a user turn (as some gateways do) would change
//   who is speaking and could break the required user/assistant alternation.
// - `reasoning_effort` becomes a thinking budget (spec 2 §4.2); sampling parameters Anthropic
//   rejects while thinking is on are dropped rather than sent to fail.
// - OpenAI-only fields (n, logprobs, penalties, seed, response_format, stream_options, ...) are
//   not sent: Anthropic answers unknown fields with a 400.
import { GatewayError } from '../../../lib/errors.ts';
import type { AdapterTarget } from '../contract.ts';

type Json = Record<string, unknown>;

/** Anthropic requires `max_tokens`; this is sent when the caller gave none. */
export const DEFAULT_MAX_TOKENS = 4096;

/** Thinking budget per OpenAI `reasoning_effort` (spec 2 §4.2). */
export const THINKING_BUDGETS: Readonly<Record<string, number>> = {
  minimal: 1024,
  low: 1024,
  medium: 2048,
  high: 4096,
  xhigh: 8192,
  max: 16384,
};

/** Anthropic's smallest accepted `budget_tokens`; the budget must also stay below `max_tokens`. */
export const MIN_THINKING_BUDGET = 1024;

function invalid(message: string, param: string): GatewayError {
  return new GatewayError('invalid_request', message, { param, publicCode: null });
}

function isObject(v: unknown): v is Json {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Split `data:<mime>[;params];base64,<data>`; undefined when `url` is not a base64 data URL. */
export function parseDataUrl(url: string): { mediaType: string; data: string } | undefined {
  if (!url.startsWith('data:')) return undefined;
  const comma = url.indexOf(',');
  if (comma < 0) return undefined;
  const header = url.slice(5, comma);
  if (!header.endsWith(';base64')) return undefined;
  const semi = header.indexOf(';');
  return { mediaType: header.slice(0, semi), data: url.slice(comma + 1) };
}

function isHttpUrl(url: string): boolean {
  return url.startsWith('https://') || url.startsWith('http://');
}

/** `cache_control` rides along on any block that carries one (Anthropic prompt caching). */
function withCache(block: Json, part: Json): Json {
  if (part.cache_control !== undefined) block.cache_control = part.cache_control;
  return block;
}

function imageBlock(part: Json, path: string): Json {
  const ref = part.image_url;
  const url = typeof ref === 'string' ? ref : isObject(ref) ? ref.url : undefined;
  if (typeof url !== 'string') throw invalid(`'${path}.image_url.url' must be a string`, `${path}.image_url.url`);
  const data = parseDataUrl(url);
  if (data !== undefined) {
    return withCache({ type: 'image', source: { type: 'base64', media_type: data.mediaType, data: data.data } }, part);
  }
  if (isHttpUrl(url)) return withCache({ type: 'image', source: { type: 'url', url } }, part);
  throw invalid(`'${path}.image_url.url' must be an http(s) URL or a base64 data URL`, `${path}.image_url.url`);
}

function documentBlock(part: Json, path: string): Json {
  const file = part.file;
  const fileData = isObject(file) ? file.file_data : undefined;
  if (typeof fileData !== 'string') {
    // A `file_id` names a file in OpenAI's store, which Anthropic cannot read.
    throw invalid(`'${path}.file.file_data' is required: file references cannot be sent to this provider`, `${path}.file.file_data`);
  }
  const parsed = parseDataUrl(fileData) ?? { mediaType: 'application/pdf', data: fileData };
  // Anthropic takes base64 PDFs; plain text documents go as a text source.
  const source =
    parsed.mediaType === 'text/plain'
      ? { type: 'text', media_type: 'text/plain', data: Buffer.from(parsed.data, 'base64').toString('utf8') }
      : { type: 'base64', media_type: parsed.mediaType, data: parsed.data };
  const block: Json = { type: 'document', source };
  if (isObject(file) && typeof file.filename === 'string') block.title = file.filename;
  return withCache(block, part);
}

/** OpenAI message content (string or parts) → Anthropic content blocks. Empty text is dropped. */
function contentBlocks(content: unknown, path: string): Json[] {
  if (content === undefined || content === null) return [];
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content)) throw invalid(`'${path}' must be a string or an array of content parts`, path);
  const out: Json[] = [];
  for (let j = 0; j < content.length; j++) {
    const part: unknown = content[j];
    const at = `${path}[${j}]`;
    if (!isObject(part)) throw invalid(`'${at}' must be an object`, at);
    switch (part.type) {
      case 'text':
      case 'refusal': {
        const text = part.type === 'text' ? part.text : part.refusal;
        if (typeof text !== 'string') throw invalid(`'${at}.${String(part.type)}' must be a string`, `${at}.${String(part.type)}`);
        if (text !== '') out.push(withCache({ type: 'text', text }, part));
        break;
      }
      case 'image_url':
        out.push(imageBlock(part, at));
        break;
      case 'file':
        out.push(documentBlock(part, at));
        break;
      default:
        throw invalid(`'${at}.type' ${JSON.stringify(part.type ?? null)} is not supported by this provider`, `${at}.type`);
    }
  }
  return out;
}

function toolUseBlocks(toolCalls: unknown, i: number): Json[] {
  if (toolCalls === undefined || toolCalls === null) return [];
  if (!Array.isArray(toolCalls)) throw invalid(`'messages[${i}].tool_calls' must be an array`, `messages[${i}].tool_calls`);
  const out: Json[] = [];
  for (let j = 0; j < toolCalls.length; j++) {
    const call: unknown = toolCalls[j];
    const at = `messages[${i}].tool_calls[${j}]`;
    const fn = isObject(call) ? call.function : undefined;
    if (!isObject(call) || !isObject(fn) || typeof fn.name !== 'string') throw invalid(`'${at}.function.name' must be a string`, `${at}.function.name`);
    if (typeof call.id !== 'string') throw invalid(`'${at}.id' must be a string`, `${at}.id`);
    out.push({ type: 'tool_use', id: call.id, name: fn.name, input: toolInput(fn.arguments, `${at}.function.arguments`) });
  }
  return out;
}

/** Tool-call arguments (a JSON text) → the object Anthropic wants as `input`. */
function toolInput(args: unknown, param: string): Json {
  if (isObject(args)) return args;
  if (typeof args === 'string') {
    if (args.trim() === '') return {};
    let parsed: unknown;
    try {
      parsed = JSON.parse(args);
    } catch {
      throw invalid(`'${param}' is not valid JSON`, param);
    }
    if (isObject(parsed)) return parsed;
  }
  throw invalid(`'${param}' must be a JSON object`, param);
}

function toolResultBlock(m: Json, i: number): Json {
  if (typeof m.tool_call_id !== 'string' || m.tool_call_id === '') {
    throw invalid(`'messages[${i}].tool_call_id' is required for tool messages`, `messages[${i}].tool_call_id`);
  }
  const block: Json = { type: 'tool_result', tool_use_id: m.tool_call_id };
  if (typeof m.content === 'string') {
    if (m.content !== '') block.content = m.content;
  } else {
    const blocks = contentBlocks(m.content, `messages[${i}].content`);
    if (blocks.length > 0) block.content = blocks;
  }
  return block;
}

interface Turn {
  role: 'user' | 'assistant';
  content: Json[];
}

/** The system field: one string when every piece is plain text, else text blocks. */
function systemField(blocks: Json[], textPerMessage: string[]): string | Json[] | undefined {
  if (blocks.length === 0) return undefined;
  const plain = blocks.every((b) => b.type === 'text' && Object.keys(b).length === 2);
  return plain ? textPerMessage.join('\n\n') : blocks;
}

function encodeMessages(messages: unknown): { system: string | Json[] | undefined; turns: Turn[] } {
  if (!Array.isArray(messages)) throw invalid("'messages' must be an array", 'messages');
  const systemBlocks: Json[] = [];
  const systemTexts: string[] = [];
  const turns: Turn[] = [];
  const push = (role: Turn['role'], blocks: Json[]): void => {
    if (blocks.length === 0) return;
    const last = turns[turns.length - 1];
    // A loop, not push(...blocks): a spread of some 100k parts overflows the stack.
    if (last !== undefined && last.role === role) for (const block of blocks) last.content.push(block);
    else turns.push({ role, content: blocks });
  };
  for (let i = 0; i < messages.length; i++) {
    const m: unknown = messages[i];
    if (!isObject(m)) throw invalid(`'messages[${i}]' must be an object`, `messages[${i}]`);
    switch (m.role) {
      case 'system':
      case 'developer': {
        const blocks = contentBlocks(m.content, `messages[${i}].content`);
        if (blocks.length === 0) break;
        for (const block of blocks) systemBlocks.push(block);
        systemTexts.push(blocks.map((b) => (typeof b.text === 'string' ? b.text : '')).join(''));
        break;
      }
      case 'user':
        push('user', contentBlocks(m.content, `messages[${i}].content`));
        break;
      case 'assistant':
        // `reasoning_content` is not sent back: Anthropic accepts only signed thinking blocks.
        push('assistant', [...contentBlocks(m.content, `messages[${i}].content`), ...toolUseBlocks(m.tool_calls, i)]);
        break;
      case 'tool':
        push('user', [toolResultBlock(m, i)]);
        break;
      default:
        throw invalid(`'messages[${i}].role' ${JSON.stringify(m.role ?? null)} is not supported`, `messages[${i}].role`);
    }
  }
  for (const turn of turns) {
    // Anthropic wants the tool results of a user turn before anything else in it.
    if (turn.role === 'user' && turn.content.some((b, k) => b.type === 'tool_result' && k > 0 && turn.content[k - 1].type !== 'tool_result')) {
      turn.content = [...turn.content.filter((b) => b.type === 'tool_result'), ...turn.content.filter((b) => b.type !== 'tool_result')];
    }
  }
  return { system: systemField(systemBlocks, systemTexts), turns };
}

function renderTurn(turn: Turn): Json {
  const only = turn.content.length === 1 ? turn.content[0] : undefined;
  if (only !== undefined && only.type === 'text' && Object.keys(only).length === 2) return { role: turn.role, content: only.text };
  return { role: turn.role, content: turn.content };
}

function encodeTools(tools: unknown): Json[] | undefined {
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) throw invalid("'tools' must be an array", 'tools');
  if (tools.length === 0) return undefined;
  return tools.map((t: unknown, i) => {
    if (!isObject(t) || t.type !== 'function') throw invalid(`'tools[${i}].type' must be "function" for this provider`, `tools[${i}].type`);
    const fn = t.function;
    if (!isObject(fn) || typeof fn.name !== 'string') throw invalid(`'tools[${i}].function.name' must be a string`, `tools[${i}].function.name`);
    const tool: Json = { name: fn.name };
    if (typeof fn.description === 'string') tool.description = fn.description;
    tool.input_schema = isObject(fn.parameters) ? fn.parameters : { type: 'object', properties: {} };
    return withCache(tool, t);
  });
}

function encodeToolChoice(choice: unknown, parallel: unknown): Json | undefined {
  let out: Json | undefined;
  if (choice === 'auto') out = { type: 'auto' };
  else if (choice === 'required') out = { type: 'any' };
  else if (choice === 'none') out = { type: 'none' };
  else if (isObject(choice) && choice.type === 'function' && isObject(choice.function) && typeof choice.function.name === 'string') {
    out = { type: 'tool', name: choice.function.name };
  }
  // Other shapes (OpenAI `allowed_tools`, ...) have no Anthropic form and are left out.
  if (parallel === false && (out === undefined || out.type !== 'none')) out = { ...(out ?? { type: 'auto' }), disable_parallel_tool_use: true };
  return out;
}

function positiveInt(v: unknown, param: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw invalid(`'${param}' must be a positive integer`, param);
  return v;
}

/**
 * The thinking budget for `reasoning_effort`, or undefined when thinking stays off. A caller's
 * `max_tokens` caps the budget below it; Anthropic's minimum budget is 1024, so a `max_tokens`
 * of 1024 or less leaves thinking off (spec 2 §4.2: "at 1024 or less thinking stays off").
 */
export function thinkingBudget(effort: string, maxTokens: number | undefined): number | undefined {
  const budget = THINKING_BUDGETS[effort];
  if (budget === undefined) return undefined;
  const capped = maxTokens === undefined ? budget : Math.min(budget, maxTokens - 1);
  return capped < MIN_THINKING_BUDGET ? undefined : capped;
}

const EFFORTS_TEXT = `'none', ${Object.keys(THINKING_BUDGETS).map((k) => `'${k}'`).join(', ')}`;

/** Canonical chat request → Anthropic Messages request body for `target`. Throws a 400 GatewayError naming the field. */
export function encodeAnthropicRequest(body: Record<string, unknown>, target: AdapterTarget): Record<string, unknown> {
  const { system, turns } = encodeMessages(body.messages);
  const out: Json = { model: target.upstreamModel };
  if (system !== undefined) out.system = system;
  out.messages = turns.map(renderTurn);

  const callerMax = positiveInt(body.max_tokens, 'max_tokens') ?? positiveInt(body.max_completion_tokens, 'max_completion_tokens');

  const tools = encodeTools(body.tools);
  if (tools !== undefined) {
    out.tools = tools;
    const choice = encodeToolChoice(body.tool_choice, body.parallel_tool_calls);
    if (choice !== undefined) out.tool_choice = choice;
  }

  let thinking: Json | undefined;
  if (isObject(body.thinking)) {
    thinking = body.thinking; // the caller's own Anthropic setting wins over reasoning_effort
  } else if (body.reasoning_effort !== undefined && body.reasoning_effort !== null) {
    const effort = body.reasoning_effort;
    if (typeof effort !== 'string' || (effort !== 'none' && THINKING_BUDGETS[effort] === undefined)) {
      throw invalid(`'reasoning_effort' must be one of ${EFFORTS_TEXT}`, 'reasoning_effort');
    }
    const forced = out.tool_choice !== undefined && ((out.tool_choice as Json).type === 'any' || (out.tool_choice as Json).type === 'tool');
    const budget = thinkingBudget(effort, callerMax);
    // Anthropic refuses thinking with a forced tool choice, and refuses it when the last
    // assistant turn used tools without the signed thinking blocks canonical history cannot carry.
    if (budget !== undefined && !forced && !lastAssistantUsedTools(turns)) thinking = { type: 'enabled', budget_tokens: budget };
  }

  const budget = thinking !== undefined && thinking.type === 'enabled' && typeof thinking.budget_tokens === 'number' ? thinking.budget_tokens : undefined;
  out.max_tokens = callerMax ?? (budget !== undefined ? budget + DEFAULT_MAX_TOKENS : DEFAULT_MAX_TOKENS);
  if (thinking !== undefined) out.thinking = thinking;
  const thinkingOn = thinking !== undefined && thinking.type !== 'disabled';

  const stop = body.stop;
  if (typeof stop === 'string') out.stop_sequences = [stop];
  else if (Array.isArray(stop) && stop.length > 0) out.stop_sequences = stop;

  // With thinking on Anthropic accepts temperature 1 only, no top_k, and top_p from 0.95 to 1.
  if (typeof body.temperature === 'number' && (!thinkingOn || body.temperature === 1)) out.temperature = body.temperature;
  if (typeof body.top_p === 'number' && (!thinkingOn || body.top_p >= 0.95)) out.top_p = body.top_p;
  if (typeof body.top_k === 'number' && !thinkingOn) out.top_k = body.top_k;

  const meta = body.metadata;
  const userId = isObject(meta) && typeof meta.user_id === 'string' ? meta.user_id : typeof body.user === 'string' ? body.user : undefined;
  if (userId !== undefined) out.metadata = { user_id: userId };

  if (typeof body.stream === 'boolean') out.stream = body.stream;
  return out;
}

function lastAssistantUsedTools(turns: Turn[]): boolean {
  for (let i = turns.length - 1; i >= 0; i--) {
    if (turns[i].role === 'assistant') return turns[i].content.some((b) => b.type === 'tool_use');
  }
  return false;
}

