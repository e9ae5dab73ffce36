// Request shape detection (spec 3 §6), for extraction only: the body is relayed unchanged.
// In order: `messages` (chat or messages-style), `input` as string or array (responses),
// `prompt` (completions), top-level `query` with a `documents` array (rerank), a `model`
// string with an `input` object (a vendor's native envelope); anything else (JSON-RPC, REST,
// non-JSON, empty) is opaque. The body is scanned for top-level members, not parsed.
import { topLevelMembers, type Span } from '../lib/json-scan.ts';

export type RequestShape = 'chat' | 'responses' | 'completions' | 'rerank' | 'native' | 'opaque';

export interface DetectedRequest {
  readonly shape: RequestShape;
  /** The body's `model` for recognised shapes ('' otherwise), bounded. */
  readonly model: string;
}

export const MAX_MODEL_CHARS = 256;
const OPAQUE: DetectedRequest = { shape: 'opaque', model: '' };

function firstChar(text: string, span: Span | undefined): number {
  return span === undefined ? -1 : text.charCodeAt(span.start);
}

function modelOf(text: string, span: Span | undefined): string {
  if (span === undefined || text.charCodeAt(span.start) !== 34) return '';
  try {
    const model = JSON.parse(text.slice(span.start, span.end)) as string;
    return model.length > MAX_MODEL_CHARS ? model.slice(0, MAX_MODEL_CHARS) : model;
  } catch {
    return '';
  }
}

const OPEN_ARRAY = 91;
const OPEN_OBJECT = 123;
const QUOTE = 34;

function detectShape(text: string, members: Map<string, Span>): RequestShape {
  if (firstChar(text, members.get('messages')) === OPEN_ARRAY) return 'chat';
  const input = firstChar(text, members.get('input'));
  if (input === QUOTE || input === OPEN_ARRAY) return 'responses';
  const prompt = firstChar(text, members.get('prompt'));
  if (prompt === QUOTE || prompt === OPEN_ARRAY) return 'completions';
  if (members.has('query') && firstChar(text, members.get('documents')) === OPEN_ARRAY) return 'rerank';
  if (input === OPEN_OBJECT && firstChar(text, members.get('model')) === QUOTE) return 'native';
  return 'opaque';
}

export function detectRequest(body: Buffer): DetectedRequest {
  // Only a JSON object can have a shape; everything else is opaque without decoding it.
  let i = 0;
  while (i < body.length && (body[i] === 32 || body[i] === 10 || body[i] === 13 || body[i] === 9)) i++;
  if (i >= body.length || body[i] !== OPEN_OBJECT) return OPAQUE;
  const text = body.toString('utf8');
  // Members as the upstream's JSON parser will read them (a repeated `model` is its last value):
  // the model decides which limits apply.
  const members = topLevelMembers(text);
  const shape = detectShape(text, members);
  return shape === 'opaque' ? OPAQUE : { shape, model: modelOf(text, members.get('model')) };
}

/** Shapes whose responses report usage in the chat, responses or completions way. */
export function isModelShape(shape: RequestShape): boolean {
  return shape === 'chat' || shape === 'responses' || shape === 'completions';
}
