// POST /v1/embeddings: the OpenAI Embeddings endpoint. Native only: a target whose adapter has no
// embeddings endpoint answers 501 not_implemented; model groups pass such targets over.
import type { RequestContext } from '../../http/context.ts';
import type { ApiKeyEntry } from '../../snapshot/snapshot.ts';
import { parseEmbeddingsRequest, type EmbeddingsRequest } from '../protocols/openai-embeddings.ts';
import { openAIEmbeddingsCodec } from '../dispatch/embeddings-codec.ts';
import type { CallerRequest } from '../dispatch/attempt.ts';
import type { ProxyOptions } from '../proxy.ts';
import { serveParsed } from './serve.ts';

function embeddingsCall(request: EmbeddingsRequest, key: ApiKeyEntry): CallerRequest {
  return { codec: openAIEmbeddingsCodec, operation: 'embeddings', body: request, alias: request.model, stream: false, wantUsage: false, apiKey: key };
}

export function embeddings(ctx: RequestContext, options: ProxyOptions): Promise<void> {
  return serveParsed(ctx, options, parseEmbeddingsRequest, embeddingsCall);
}
