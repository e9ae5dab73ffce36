// The rerank wire format (POST /v1/rerank) as Cohere, Jina and the OpenAI-compatible servers that
// rerank (vLLM, Infinity) take it: `query` and `documents` in, `results` of `{index,
// relevance_score}` out. The request checks the gateway makes before any provider call, and the
// input tokens an answer reports. The body is forwarded as sent (model replaced).
import { invalid, parseOpenAIBody } from './openai-chat.ts';
import type { CanonicalUsage } from './canonical.ts';

export interface RerankRequest extends Record<string, unknown> {
  model: string;
  query: string | Record<string, unknown>;
  documents: unknown[];
  top_n?: number;
}

/** Parse and check a rerank body. Throws a 400 GatewayError naming the field. */
export function parseRerankRequest(raw: Buffer): RerankRequest {
  const req = parseOpenAIBody(raw);
  // A query is text, or an object (a multimodal query, as vLLM takes it).
  const q = req.query;
  if (!(typeof q === 'string' && q !== '') && (q === null || typeof q !== 'object' || Array.isArray(q))) throw invalid("'query' is required and must be a non-empty string or an object", 'query');
  const docs = req.documents;
  if (!Array.isArray(docs) || docs.length === 0) throw invalid("'documents' is required and must be a non-empty array", 'documents');
  // A document is its text, or an object (Jina's `{text}`, a vendor's structured document).
  const bad = docs.findIndex((d) => typeof d !== 'string' && (d === null || typeof d !== 'object' || Array.isArray(d)));
  if (bad >= 0) throw invalid(`'documents[${bad}]' must be a string or an object`, `documents[${bad}]`);
  const topN = req.top_n;
  if (topN !== undefined && topN !== null && (typeof topN !== 'number' || !Number.isInteger(topN) || topN < 1)) throw invalid("'top_n' must be a positive integer", 'top_n');
  if (req.stream === true) throw invalid("'stream' is not supported on /v1/rerank", 'stream');
  return req as RerankRequest;
}

const count = (v: unknown): number | undefined => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : undefined);

/**
 * The tokens of a rerank answer: as input, `usage.prompt_tokens`, `usage.input_tokens`,
 * `usage.total_tokens` or Cohere's `meta.billed_units.input_tokens`, the first present (an answer
 * that reports none, as Cohere's billing search units, counts zero); as total, the reported one.
 */
export function rerankUsage(answer: Record<string, unknown>): CanonicalUsage {
  const usage = answer.usage as Record<string, unknown> | undefined;
  const billed = (answer.meta as Record<string, unknown> | undefined)?.billed_units as Record<string, unknown> | undefined;
  const input = count(usage?.prompt_tokens) ?? count(usage?.input_tokens) ?? count(usage?.total_tokens) ?? count(billed?.input_tokens) ?? 0;
  return { prompt_tokens: input, total_tokens: count(usage?.total_tokens) };
}
