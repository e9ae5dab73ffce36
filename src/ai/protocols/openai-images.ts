// The OpenAI Images generation wire format (POST /v1/images/generations): the request checks the
// gateway makes before any provider call, and the tokens an answer reports (gpt-image models
// report them; DALL·E models report none). The body is forwarded as sent (model replaced), so
// `size`, `quality`, `response_format`, `background` and the rest reach the upstream as is.
import type { CanonicalUsage } from './canonical.ts';
import { invalid, parseOpenAIBody } from './openai-chat.ts';

export interface ImagesRequest extends Record<string, unknown> {
  model: string;
  prompt: string;
  n?: number;
}

/** Parse and check an image generation body. Throws a 400 GatewayError naming the field. */
export function parseImagesRequest(raw: Buffer): ImagesRequest {
  const req = parseOpenAIBody(raw);
  if (typeof req.prompt !== 'string' || req.prompt === '') throw invalid("'prompt' is required and must be a non-empty string", 'prompt');
  const n = req.n;
  if (n !== undefined && n !== null && (typeof n !== 'number' || !Number.isInteger(n) || n < 1)) throw invalid("'n' must be a positive integer", 'n');
  // Partial-image streams are not relayed: the answer is one JSON document.
  if (req.stream === true) throw invalid("'stream' is not supported on /v1/images/generations", 'stream');
  return req as ImagesRequest;
}

/** The tokens of an images answer (`usage.input_tokens` / `output_tokens` / `total_tokens`), or undefined when it reports none. */
export function imagesUsage(answer: Record<string, unknown>): CanonicalUsage | undefined {
  const u = answer.usage;
  if (u === null || typeof u !== 'object' || Array.isArray(u)) return undefined;
  const usage = u as Record<string, unknown>;
  return { prompt_tokens: usage.input_tokens as number, completion_tokens: usage.output_tokens as number, total_tokens: usage.total_tokens as number };
}
