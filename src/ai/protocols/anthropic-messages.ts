// The Anthropic Messages wire format as callers speak it (`POST /v1/messages` and
// `/v1/messages/count_tokens`): request checks that must run before any provider call, the
// `{type:"error"}` envelope, and reading usage and errors from Messages bodies.
import { ERROR_CODES, GatewayError, type ErrorPolicy } from '../../lib/errors.ts';
import { findTopLevelMember } from '../../lib/json-scan.ts';
import { tokenCount } from '../../lib/token-count.ts';
import type { CanonicalUsage } from './canonical.ts';
import { MAX_MODEL_NAME_CHARS, MODEL_TOO_LONG } from './openai-chat.ts';

export type { CanonicalUsage };

export interface AnthropicUsage {
  input_tokens?: number;
  output_tokens?: number;
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
}

/** A content block; only `type` is checked, the rest rides along. */
export interface ContentBlock {
  type: string;
  [field: string]: unknown;
}

export interface TextBlock {
  type: 'text';
  text: string;
  [field: string]: unknown;
}

/** Message roles a caller may send. `system` is the API's mid-conversation system message. */
export const MESSAGE_ROLES: ReadonlySet<string> = new Set(['user', 'assistant', 'system']);

export interface AnthropicMessage {
  role: 'user' | 'assistant' | 'system';
  content: string | ContentBlock[];
  [field: string]: unknown;
}

/** A `/v1/messages/count_tokens` body: a Messages request without `max_tokens`. */
export interface CountTokensRequest {
  model: string;
  messages: AnthropicMessage[];
  system?: string | TextBlock[];
  [field: string]: unknown;
}

export interface MessagesRequest extends CountTokensRequest {
  max_tokens: number;
  stream?: boolean;
}

function invalid(message: string, param: string | null): GatewayError {
  return new GatewayError('invalid_request', message, { param, publicCode: null });
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function checkTextBlocks(blocks: unknown[], path: string): void {
  for (let j = 0; j < blocks.length; j++) {
    const b = blocks[j];
    if (!isObject(b) || b.type !== 'text' || typeof b.text !== 'string') {
      throw invalid(`'${path}[${j}]' must be a text block ({"type":"text","text":...})`, `${path}[${j}]`);
    }
  }
}

function parseCommon(raw: Buffer, needMaxTokens: boolean): Record<string, unknown> {
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new GatewayError('invalid_json', 'request body is not valid JSON', { publicCode: null });
  }
  if (!isObject(body)) throw invalid('request body must be a JSON object', null);
  if (typeof body.model !== 'string' || body.model.length === 0) {
    throw invalid("'model' is required and must be a non-empty string", 'model');
  }
  if (body.model.length > MAX_MODEL_NAME_CHARS) throw invalid(MODEL_TOO_LONG, 'model');
  if (needMaxTokens) {
    const mt = body.max_tokens;
    if (typeof mt !== 'number' || !Number.isInteger(mt) || mt < 1) {
      throw invalid("'max_tokens' is required and must be a positive integer", 'max_tokens');
    }
  }
  if (!Array.isArray(body.messages)) throw invalid("'messages' is required and must be an array", 'messages');
  const messages = body.messages as unknown[];
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (!isObject(m)) throw invalid(`'messages[${i}]' must be an object`, `messages[${i}]`);
    const role = m.role;
    if (typeof role !== 'string' || !MESSAGE_ROLES.has(role)) {
      throw invalid(
        `Invalid value for 'messages[${i}].role': ${JSON.stringify(role ?? null)}. Supported values are: 'user', 'assistant' and 'system'.`,
        `messages[${i}].role`,
      );
    }
    const content = m.content;
    if (typeof content === 'string') continue;
    if (!Array.isArray(content)) {
      throw invalid(`'messages[${i}].content' must be a string or an array of content blocks`, `messages[${i}].content`);
    }
    if (role === 'system') {
      checkTextBlocks(content, `messages[${i}].content`);
      continue;
    }
    for (let j = 0; j < content.length; j++) {
      const b = content[j];
      if (!isObject(b) || typeof b.type !== 'string') {
        throw invalid(`'messages[${i}].content[${j}]' must be a content block with a string 'type'`, `messages[${i}].content[${j}]`);
      }
    }
  }
  const system = body.system;
  if (system !== undefined && typeof system !== 'string') {
    if (!Array.isArray(system)) throw invalid("'system' must be a string or an array of text blocks", 'system');
    checkTextBlocks(system, 'system');
  }
  if (body.stream !== undefined && typeof body.stream !== 'boolean') throw invalid("'stream' must be a boolean", 'stream');
  return body;
}

/** Parse and check a `/v1/messages` body. Throws a 400 GatewayError naming the field. */
export function parseMessagesRequest(raw: Buffer): MessagesRequest {
  return parseCommon(raw, true) as MessagesRequest;
}

/** Parse and check a `/v1/messages/count_tokens` body (no `max_tokens`). */
export function parseCountTokensRequest(raw: Buffer): CountTokensRequest {
  return parseCommon(raw, false) as CountTokensRequest;
}

/** Every error `type` the Messages API documents. */
export const ANTHROPIC_ERROR_TYPES: ReadonlySet<string> = new Set([
  'invalid_request_error',
  'authentication_error',
  'billing_error',
  'permission_error',
  'not_found_error',
  'request_too_large',
  'rate_limit_error',
  'api_error',
  'timeout_error',
  'overloaded_error',
]);

/**
 * The Messages error type for an HTTP status: the reference gateway's table (reference/ai-gateway.md
 * §5.3, applied to every error on `/v1/messages` by §5.5; spec 2 §7 leaves the types open). A 503
 * the gateway answers itself (load shedding, shutdown, no usable target) is `overloaded_error`, and
 * Anthropic's own 529 is too. Every status outside the table is `api_error`: a 504 timeout, a 402,
 * a 405 or 409 (only 408 is `timeout_error`). An upstream 5xx reaches the caller as a 502
 * (`api_error`); an Anthropic upstream's own type is kept where the status maps to `api_error`
 * (see anthropicErrorBody), so its `billing_error` or `timeout_error` still reaches the caller.
 */
export function anthropicErrorType(status: number): string {
  switch (status) {
    case 400:
    case 422:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 408:
      return 'timeout_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 503:
    case 529:
      return 'overloaded_error';
    default:
      return 'api_error';
  }
}

export interface AnthropicErrorBody {
  type: 'error';
  error: { type: string; message: string; policy?: ErrorPolicy };
}

/**
 * The `{type:"error"}` envelope for a gateway error. The type follows the status, except that a
 * type relayed from an Anthropic upstream is kept. A relayed type is one that overrides the
 * catalogue's type for the code: the catalogue's own types (`invalid_request_error` on a 404,
 * say) describe the OpenAI envelope and are re-derived from the status here. A relayed type is
 * kept only where the status has no type of its own (a 5xx: `overloaded_error`, say) or agrees
 * with it: an OpenAI upstream's `invalid_request_error` on a 401 is the status's
 * `authentication_error` to an Anthropic caller.
 */
export function anthropicErrorBody(err: GatewayError): AnthropicErrorBody {
  const byStatus = anthropicErrorType(err.status);
  const relayed = err.type !== ERROR_CODES[err.code].type && ANTHROPIC_ERROR_TYPES.has(err.type) && (byStatus === 'api_error' || byStatus === err.type);
  const error: AnthropicErrorBody['error'] = { type: relayed ? err.type : byStatus, message: err.publicMessage };
  if (err.policy !== undefined) error.policy = err.policy;
  return { type: 'error', error };
}

/** The SSE frame that ends a Messages stream which failed after its head was sent. */
export function anthropicStreamErrorFrame(err: GatewayError): string {
  return `event: error\ndata: ${JSON.stringify(anthropicErrorBody(err))}\n\n`;
}

/**
 * Anthropic usage → canonical. Anthropic's `input_tokens` excludes cache reads and writes, so the
 * canonical prompt count adds them back.
 */
export function anthropicUsageToCanonical(u: AnthropicUsage | undefined): CanonicalUsage | undefined {
  if (u === undefined || u === null) return undefined;
  const read = tokenCount(u.cache_read_input_tokens);
  const write = tokenCount(u.cache_creation_input_tokens);
  const prompt = (tokenCount(u.input_tokens) ?? 0) + (read ?? 0) + (write ?? 0);
  const completion = tokenCount(u.output_tokens) ?? 0;
  const out: CanonicalUsage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  if (read !== undefined || write !== undefined) {
    const details: { cached_tokens?: number; cache_creation_tokens?: number } = {};
    if (read !== undefined) details.cached_tokens = read;
    if (write !== undefined) details.cache_creation_tokens = write;
    out.prompt_tokens_details = details;
  }
  return out;
}

/** Read `{type:"error", error:{type, message}}` from an upstream body or an `error` stream frame. */
export function readAnthropicError(body: string): { type?: string; message?: string } | undefined {
  if (body.length === 0) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (!isObject(parsed) || !isObject(parsed.error)) return undefined;
  const e = parsed.error;
  const out: { type?: string; message?: string } = {};
  if (typeof e.type === 'string') out.type = e.type;
  if (typeof e.message === 'string') out.message = e.message;
  return out;
}

/** The top-level `usage` of a Messages JSON response (text), as canonical usage. */
export function scanMessagesUsage(text: string): CanonicalUsage | undefined {
  const span = findTopLevelMember(text, 'usage');
  if (span === undefined || text.charCodeAt(span.start) !== 123) return undefined;
  try {
    return anthropicUsageToCanonical(JSON.parse(text.slice(span.start, span.end)) as AnthropicUsage);
  } catch {
    return undefined;
  }
}
