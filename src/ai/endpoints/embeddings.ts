// POST /v1/embeddings: the OpenAI Embeddings endpoint. Native only: a target whose adapter has no
// embeddings endpoint answers 501 not_implemented; model groups fail over as on chat.
import type { RequestContext } from '../../http/context.ts';
import { readBody } from '../../http/body.ts';
import { parseEmbeddingsRequest } from '../protocols/openai-embeddings.ts';
import { openAIEmbeddingsCodec } from '../dispatch/embeddings-codec.ts';
import { authenticate, currentSnapshot, parseRequest } from '../phases.ts';
import type { ProxyOptions } from '../proxy.ts';
import { serveModel } from './serve.ts';

export async function embeddings(ctx: RequestContext, options: ProxyOptions): Promise<void> {
  const snapshot = currentSnapshot(options.snapshots);
  const key = authenticate(ctx, snapshot);
  const request = parseRequest(ctx, await readBody(ctx, options.bodyLimitBytes), parseEmbeddingsRequest);
  await serveModel(ctx, options, snapshot, key, {
    codec: openAIEmbeddingsCodec,
    operation: 'embeddings',
    body: request,
    alias: request.model,
    stream: false,
    wantUsage: false,
    apiKey: key,
  });
}
