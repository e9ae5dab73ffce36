// POST /v1/chat/completions: the OpenAI Chat Completions endpoint.
import type { RequestContext } from '../../http/context.ts';
import type { ApiKeyEntry } from '../../snapshot/snapshot.ts';
import { parseChatRequest, type ChatRequest } from '../protocols/openai-chat.ts';
import { openAIChatCodec } from '../dispatch/codecs.ts';
import type { CallerRequest } from '../dispatch/attempt.ts';
import type { ProxyOptions } from '../proxy.ts';
import { serveParsed } from './serve.ts';

function chatCall(request: ChatRequest, key: ApiKeyEntry): CallerRequest {
  return {
    codec: openAIChatCodec,
    operation: 'chat',
    body: request,
    alias: request.model,
    stream: request.stream === true,
    wantUsage: request.stream_options?.include_usage === true,
    apiKey: key,
  };
}

export function chatCompletions(ctx: RequestContext, options: ProxyOptions): Promise<void> {
  return serveParsed(ctx, options, parseChatRequest, chatCall);
}
