// POST /v1/completions: the OpenAI (legacy) Completions endpoint. Native only: a target whose
// adapter has no completions endpoint answers 501 not_implemented; model groups pass such targets over.
import type { RequestContext } from '../../http/context.ts';
import type { ApiKeyEntry } from '../../snapshot/snapshot.ts';
import { parseCompletionsRequest, type CompletionsRequest } from '../protocols/openai-completions.ts';
import { openAICompletionsCodec } from '../dispatch/completions-codec.ts';
import type { CallerRequest } from '../dispatch/attempt.ts';
import type { ProxyOptions } from '../proxy.ts';
import { serveParsed } from './serve.ts';

function completionsCall(request: CompletionsRequest, key: ApiKeyEntry): CallerRequest {
  return {
    codec: openAICompletionsCodec,
    operation: 'completions',
    body: request,
    alias: request.model,
    stream: request.stream === true,
    wantUsage: request.stream_options?.include_usage === true,
    apiKey: key,
  };
}

export function completions(ctx: RequestContext, options: ProxyOptions): Promise<void> {
  return serveParsed(ctx, options, parseCompletionsRequest, completionsCall);
}
