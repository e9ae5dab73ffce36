// How an OpenAI-family upstream answers, as a provider key describes it (`response.reasoning_field`,
// `response.stream_done_marker`), compiled once per snapshot and read by the readers of that
// upstream's answers: the native relay and JSON splice, and the translated path's decoder.
//
// Reasoning: the canonical slot is `reasoning_content` on a choice's `message` (JSON) or `delta`
// (stream), where an Anthropic caller's thinking blocks come from. A vendor that names it otherwise
// (`reasoning`, say) gets its text copied into `reasoning_content` when that is absent; its own
// field stays as sent.

type Json = Record<string, unknown>;

export type StreamDoneMarker = 'required' | 'optional' | 'none';

export interface OpenAIResponseOptions {
  /** Path of the reasoning text inside a `message` / `delta`; undefined = `reasoning_content` itself. */
  readonly reasoningPath: readonly string[] | undefined;
  /** `"<first path segment>"`: a chunk without it carries no reasoning (a substring test, no parse). */
  readonly reasoningNeedle: string;
  /** `required`: a stream that ends without `[DONE]` is cut short, even after its finish reason. */
  readonly doneMarker: StreamDoneMarker;
}

export const CANONICAL_REASONING = 'reasoning_content';

/** undefined when the key changes nothing about how its upstream's answers are read. */
export function compileOpenAIResponseOptions(
  response: { reasoning_field?: string; stream_done_marker?: StreamDoneMarker } | undefined,
): OpenAIResponseOptions | undefined {
  let path = response?.reasoning_field?.split('.').filter((s) => s !== '');
  // `delta.reasoning` / `message.reasoning` name the same field as `reasoning`.
  if (path !== undefined && path.length > 1 && (path[0] === 'delta' || path[0] === 'message')) path = path.slice(1);
  if (path !== undefined && (path.length === 0 || (path.length === 1 && path[0] === CANONICAL_REASONING))) path = undefined;
  const doneMarker = response?.stream_done_marker ?? 'optional';
  if (path === undefined && doneMarker === 'optional') return undefined;
  return { reasoningPath: path, reasoningNeedle: path === undefined ? '' : JSON.stringify(path[0]), doneMarker };
}

function at(obj: Json, path: readonly string[]): unknown {
  let cur: unknown = obj;
  for (const seg of path) {
    if (cur === null || typeof cur !== 'object' || Array.isArray(cur)) return undefined;
    cur = (cur as Json)[seg];
  }
  return cur;
}

/**
 * Copy the reasoning text at `path` into `reasoning_content` on every choice's `slot` (`message`
 * or `delta`) that has none. True when anything changed.
 */
export function liftReasoning(chunk: Json, path: readonly string[], slot: 'message' | 'delta'): boolean {
  const choices = chunk.choices;
  if (!Array.isArray(choices)) return false;
  let changed = false;
  for (const choice of choices) {
    if (choice === null || typeof choice !== 'object') continue;
    const target = (choice as Json)[slot];
    if (target === null || typeof target !== 'object' || Array.isArray(target)) continue;
    const t = target as Json;
    const text = at(t, path);
    if (typeof text !== 'string' || text === '') continue;
    if (typeof t[CANONICAL_REASONING] === 'string' && t[CANONICAL_REASONING] !== '') continue;
    t[CANONICAL_REASONING] = text;
    changed = true;
  }
  return changed;
}

/** liftReasoning on a JSON text; the text unchanged when there is nothing to lift or it is not JSON. */
export function liftReasoningText(text: string, options: OpenAIResponseOptions, slot: 'message' | 'delta'): string {
  const path = options.reasoningPath;
  if (path === undefined || !text.includes(options.reasoningNeedle)) return text;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return text;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return text;
  return liftReasoning(parsed as Json, path, slot) ? JSON.stringify(parsed) : text;
}
