// The caller codec for OpenAI Embeddings (`/v1/embeddings`): JSON only, usage as OpenAI reports it.
import { scanUsage } from '../protocols/openai-chat.ts';
import { jsonOnlyCodec } from './json-only-codec.ts';

export const openAIEmbeddingsCodec = jsonOnlyCodec('openai-embeddings', scanUsage);
