// The OpenAI Embeddings wire format (POST /v1/embeddings): the request checks the gateway makes
// before any provider call. The body is forwarded as sent (model replaced), so fields the gateway
// does not check (`encoding_format`, `dimensions`, `user`, vendor extras) reach the upstream as is.
import { GatewayError } from '../../lib/errors.ts';
import { parseOpenAIBody } from './openai-chat.ts';

export interface EmbeddingsRequest extends Record<string, unknown> {
  model: string;
  input: string | string[] | number[] | number[][];
}

function invalid(message: string, param: string | null): GatewayError {
  return new GatewayError('invalid_request', message, { param, publicCode: null });
}

const isTokenArray = (v: unknown): v is number[] => Array.isArray(v) && v.length > 0 && v.every((n) => Number.isInteger(n));

/** `input`: a string, a list of strings, a list of token ids, or a list of such lists (none empty). */
function inputError(input: unknown): string | undefined {
  if (typeof input === 'string') return undefined;
  if (!Array.isArray(input) || input.length === 0) return "'input' is required and must be a string or a non-empty array";
  if (input.every((s) => typeof s === 'string')) return undefined;
  if (isTokenArray(input)) return undefined;
  if (input.every(isTokenArray)) return undefined;
  return "'input' must be a string, an array of strings, an array of token ids, or an array of token-id arrays";
}

/** Parse and check an embeddings body. Throws a 400 GatewayError naming the field. */
export function parseEmbeddingsRequest(raw: Buffer): EmbeddingsRequest {
  const req = parseOpenAIBody(raw);
  const problem = inputError(req.input);
  if (problem !== undefined) throw invalid(problem, 'input');
  // Its value is the provider's business (`float`, `base64`, a vendor's `int8`): the answer is relayed as is.
  if (req.encoding_format !== undefined && typeof req.encoding_format !== 'string') throw invalid("'encoding_format' must be a string", 'encoding_format');
  // No stream form exists: an upstream would answer a stream request with JSON the caller's SDK does not read.
  if (req.stream === true) throw invalid("'stream' is not supported on /v1/embeddings", 'stream');
  return req as EmbeddingsRequest;
}
