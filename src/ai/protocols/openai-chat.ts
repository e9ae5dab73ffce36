// The OpenAI Chat Completions wire format: request checks that must run before any provider
// call, the error envelope, and the few fields the gateway reads from responses and chunks.
import { GatewayError, type ErrorPolicy } from '../../lib/errors.ts';
import { findTopLevelMember } from '../../lib/json-scan.ts';

export const CHAT_ROLES: ReadonlySet<string> = new Set(['system', 'developer', 'user', 'assistant', 'tool']);

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean } & Record<string, unknown>;
  max_tokens?: number;
  max_completion_tokens?: number;
  [field: string]: unknown;
}

export interface ChatMessage {
  role: string;
  content?: unknown;
  [field: string]: unknown;
}

/** A 400 `invalid_request` in OpenAI's words: the message, the field in `param`, no code. */
export function invalid(message: string, param: string | null): GatewayError {
  return new GatewayError('invalid_request', message, { param, publicCode: null });
}

/**
 * Longest model name accepted (provider ids, ARNs and aliases are far shorter): the name is
 * echoed in errors and recorded in every usage event and log line of the request.
 */
export const MAX_MODEL_NAME_CHARS = 512;
export const MODEL_TOO_LONG = `'model' must be at most ${MAX_MODEL_NAME_CHARS} characters`;

/**
 * An OpenAI-family request body: a JSON object with a usable `model` string. Throws the 400 of
 * every OpenAI endpoint (invalid JSON, not an object, `model` missing or too long).
 */
export function parseOpenAIBody(raw: Buffer): Record<string, unknown> & { model: string } {
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new GatewayError('invalid_json', 'request body is not valid JSON', { publicCode: null });
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw invalid('request body must be a JSON object', null);
  }
  const req = body as Record<string, unknown>;
  if (typeof req.model !== 'string' || req.model.length === 0) {
    throw invalid("'model' is required and must be a non-empty string", 'model');
  }
  if (req.model.length > MAX_MODEL_NAME_CHARS) throw invalid(MODEL_TOO_LONG, 'model');
  return req as Record<string, unknown> & { model: string };
}

/** Parse and check a chat completions body. Throws a 400 GatewayError naming the field. */
export function parseChatRequest(raw: Buffer): ChatRequest {
  const req = parseOpenAIBody(raw);
  if (!Array.isArray(req.messages)) throw invalid("'messages' is required and must be an array", 'messages');
  const messages = req.messages as unknown[];
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (m === null || typeof m !== 'object' || Array.isArray(m)) {
      throw invalid(`'messages[${i}]' must be an object`, `messages[${i}]`);
    }
    const role = (m as Record<string, unknown>).role;
    if (typeof role !== 'string' || !CHAT_ROLES.has(role)) {
      throw new GatewayError(
        'invalid_role',
        `Invalid value for 'messages[${i}].role': ${JSON.stringify(role ?? null)}. Supported values are: 'system', 'developer', 'user', 'assistant', and 'tool'.`,
        { param: `messages[${i}].role`, publicCode: 'invalid_value' },
      );
    }
  }
  // OpenAI takes null for both, as for any optional field (an SDK sends it for an explicit None).
  if (req.stream !== undefined && req.stream !== null && typeof req.stream !== 'boolean') throw invalid("'stream' must be a boolean", 'stream');
  const so = req.stream_options;
  if (so !== undefined && so !== null && (typeof so !== 'object' || Array.isArray(so))) throw invalid("'stream_options' must be an object", 'stream_options');
  return req as ChatRequest;
}

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null; policy?: ErrorPolicy };
}

export function openAIErrorBody(err: GatewayError): OpenAIErrorBody {
  const error: OpenAIErrorBody['error'] = { message: err.publicMessage, type: err.type, param: err.param, code: err.publicCode };
  if (err.policy !== undefined) error.policy = err.policy;
  return { error };
}

/** The SSE frame that ends a stream which failed after its head was sent. */
export function openAIStreamErrorFrame(err: GatewayError): string {
  return `event: error\ndata: ${JSON.stringify(openAIErrorBody(err))}\n\n`;
}

export interface UpstreamErrorFields {
  message?: string;
  type?: string;
  param?: string | null;
  code?: string | null;
}

/** Read `{error:{message,type,param,code}}` (or `{error:"text"}`) from an upstream body. */
export function readOpenAIError(body: string): UpstreamErrorFields | undefined {
  if (body.length === 0) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (parsed === null || typeof parsed !== 'object') return undefined;
  const e = (parsed as Record<string, unknown>).error;
  if (typeof e === 'string') return { message: e };
  if (e === null || typeof e !== 'object') return vendorError(parsed as Record<string, unknown>);
  const o = e as Record<string, unknown>;
  const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
  return {
    message: str(o.message),
    type: str(o.type),
    param: str(o.param) ?? null,
    code: typeof o.code === 'number' ? String(o.code) : (str(o.code) ?? null),
  };
}

/**
 * The error text of the vendors on the OpenAI-compatible adapter that answer without an `error`
 * envelope: a top-level `message` (vLLM, Cohere) or `detail` (Jina and other FastAPI servers: a
 * string, or a list of validation errors with `msg`).
 */
function vendorError(body: Record<string, unknown>): UpstreamErrorFields | undefined {
  if (typeof body.message === 'string') return { message: body.message };
  const detail = body.detail;
  if (typeof detail === 'string') return { message: detail };
  if (Array.isArray(detail)) {
    const msgs = detail.map((d) => (d !== null && typeof d === 'object' ? (d as Record<string, unknown>).msg : undefined)).filter((m): m is string => typeof m === 'string');
    if (msgs.length > 0) return { message: msgs.join('; ') };
  }
  return undefined;
}

export interface OpenAIUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number };
  completion_tokens_details?: { reasoning_tokens?: number };
}

/** The top-level `usage` object of a response or chunk (JSON text), when it carries one. */
export function scanUsage(json: string): OpenAIUsage | undefined {
  const span = findTopLevelMember(json, 'usage');
  if (span === undefined || json.charCodeAt(span.start) !== 123) return undefined;
  try {
    return JSON.parse(json.slice(span.start, span.end)) as OpenAIUsage;
  } catch {
    return undefined;
  }
}
