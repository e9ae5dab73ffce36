// POST /v1/rerank: Cohere-style reranking. Native only, and only for keys labelled `openai`,
// `cohere` or `jina` (and the built-in mock): another target answers 501 not_implemented; model
// groups pass such targets over.
import type { RequestContext } from '../../http/context.ts';
import type { ApiKeyEntry } from '../../snapshot/snapshot.ts';
import { parseRerankRequest, type RerankRequest } from '../protocols/rerank.ts';
import { rerankCodec } from '../dispatch/rerank-codec.ts';
import type { CallerRequest } from '../dispatch/attempt.ts';
import type { ProxyOptions } from '../proxy.ts';
import { serveParsed } from './serve.ts';

function rerankCall(request: RerankRequest, key: ApiKeyEntry): CallerRequest {
  return { codec: rerankCodec, operation: 'rerank', body: request, alias: request.model, stream: false, wantUsage: false, apiKey: key };
}

export function rerank(ctx: RequestContext, options: ProxyOptions): Promise<void> {
  return serveParsed(ctx, options, parseRerankRequest, rerankCall);
}
