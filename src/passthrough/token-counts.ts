// Token counts read from upstream usage reports in every common spelling (OpenAI chat and
// responses, Anthropic messages, completions and vendor variants), merged field-wise by
// maximum across the frames of a stream (reports are cumulative, some partial). A report with
// none of the known fields yields nothing: no phantom zeros.

export interface TokenCounts {
  prompt?: number;
  completion?: number;
  total?: number;
  cached?: number;
  cacheCreation?: number;
  reasoning?: number;
}

import { tokenCount } from '../lib/token-count.ts';

type Obj = Record<string, unknown>;

export function isObject(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function nested(o: Obj, outer: string, inner: string): number | undefined {
  const n = o[outer];
  return isObject(n) ? tokenCount(n[inner]) : undefined;
}

function first(...values: Array<number | undefined>): number | undefined {
  for (const v of values) if (v !== undefined) return v;
  return undefined;
}

/** Counts from one usage object; undefined when it carries none of the known fields. */
export function readTokenCounts(u: unknown): TokenCounts | undefined {
  if (!isObject(u)) return undefined;
  const out: TokenCounts = {};
  const prompt = first(tokenCount(u.prompt_tokens), tokenCount(u.input_tokens));
  const completion = first(tokenCount(u.completion_tokens), tokenCount(u.output_tokens));
  const total = tokenCount(u.total_tokens);
  const cached = first(
    nested(u, 'prompt_tokens_details', 'cached_tokens'),
    nested(u, 'input_tokens_details', 'cached_tokens'),
    tokenCount(u.prompt_cache_hit_tokens),
    tokenCount(u.cached_tokens),
    tokenCount(u.cache_read_input_tokens),
    tokenCount(u.cache_read_tokens),
  );
  const cacheCreation = first(tokenCount(u.cache_creation_input_tokens), tokenCount(u.cache_creation_tokens));
  const reasoning = first(
    nested(u, 'completion_tokens_details', 'reasoning_tokens'),
    nested(u, 'output_tokens_details', 'reasoning_tokens'),
    tokenCount(u.reasoning_tokens),
  );
  if (prompt !== undefined) out.prompt = prompt;
  if (completion !== undefined) out.completion = completion;
  if (total !== undefined) out.total = total;
  if (cached !== undefined) out.cached = cached;
  if (cacheCreation !== undefined) out.cacheCreation = cacheCreation;
  if (reasoning !== undefined) out.reasoning = reasoning;
  return Object.keys(out).length === 0 ? undefined : out;
}

const FIELDS = ['prompt', 'completion', 'total', 'cached', 'cacheCreation', 'reasoning'] as const;

/** Field-wise maximum; either side may be undefined. */
export function mergeTokenCounts(a: TokenCounts | undefined, b: TokenCounts | undefined): TokenCounts | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  const out: TokenCounts = { ...a };
  for (const f of FIELDS) {
    const v = b[f];
    if (v !== undefined && (out[f] === undefined || v > out[f]!)) out[f] = v;
  }
  return out;
}

/** Rerank responses: input tokens only (spec 3 §6). */
export function rerankTokenCounts(body: unknown): TokenCounts | undefined {
  if (!isObject(body)) return undefined;
  const u = isObject(body.usage) ? body.usage : {};
  const meta = isObject(body.meta) && isObject(body.meta.billed_units) ? body.meta.billed_units : {};
  const input = first(tokenCount(u.prompt_tokens), tokenCount(u.input_tokens), tokenCount(u.total_tokens), tokenCount(meta.input_tokens));
  return input === undefined ? undefined : { prompt: input };
}

/**
 * A vendor's native envelope (top-level `model` and `input` object): output from output_tokens
 * or completion_tokens; input is total minus output when a total is given, else input_tokens or
 * prompt_tokens plus the top-level image_tokens (a nested input_tokens_details.image_tokens is
 * already part of the input count).
 */
export function nativeTokenCounts(body: unknown): TokenCounts | undefined {
  if (!isObject(body) || !isObject(body.usage)) return undefined;
  const u = body.usage;
  const output = first(tokenCount(u.output_tokens), tokenCount(u.completion_tokens));
  const total = tokenCount(u.total_tokens);
  let input: number | undefined;
  if (total !== undefined) {
    input = Math.max(0, total - (output ?? 0));
  } else {
    const base = first(tokenCount(u.input_tokens), tokenCount(u.prompt_tokens));
    const images = tokenCount(u.image_tokens);
    input = base === undefined && images === undefined ? undefined : (base ?? 0) + (images ?? 0);
  }
  const out: TokenCounts = {};
  if (input !== undefined) out.prompt = input;
  if (output !== undefined) out.completion = output;
  if (total !== undefined) out.total = total;
  const cached = nested(u, 'prompt_tokens_details', 'cached_tokens');
  const reasoning = nested(u, 'output_tokens_details', 'reasoning_tokens');
  if (cached !== undefined) out.cached = cached;
  if (reasoning !== undefined) out.reasoning = reasoning;
  return Object.keys(out).length === 0 ? undefined : out;
}
