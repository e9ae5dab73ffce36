// The OpenAI Embeddings wire format (POST /v1/embeddings): the request checks the gateway makes
// before any provider call. The body is forwarded as sent (model replaced), so fields the gateway
// does not check (`encoding_format`, `dimensions`, `user`, vendor extras) reach the upstream as is.
import { invalid, parseOpenAIBody } from './openai-chat.ts';
import { textInputError } from './openai-text-input.ts';

export interface EmbeddingsRequest extends Record<string, unknown> {
  model: string;
  input: string | string[] | number[] | number[][];
}

/** Parse and check an embeddings body. Throws a 400 GatewayError naming the field. */
export function parseEmbeddingsRequest(raw: Buffer): EmbeddingsRequest {
  const req = parseOpenAIBody(raw);
  const problem = textInputError(req.input, 'input');
  if (problem !== undefined) throw invalid(problem, 'input');
  // Its value is the provider's business (`float`, `base64`, a vendor's `int8`): the answer is relayed as is.
  const format = req.encoding_format;
  if (format !== undefined && format !== null && typeof format !== 'string') throw invalid("'encoding_format' must be a string", 'encoding_format');
  // No stream form exists: an upstream would answer a stream request with JSON the caller's SDK does not read.
  if (req.stream === true) throw invalid("'stream' is not supported on /v1/embeddings", 'stream');
  return req as EmbeddingsRequest;
}
