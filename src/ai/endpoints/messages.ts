// POST /v1/messages and /v1/messages/count_tokens: the Anthropic Messages endpoints. Native for
// messages-family targets, translated through canonical chat for every other target; token
// counting is native only (and not counted against request limits).
import type { RequestContext } from '../../http/context.ts';
import type { ApiKeyEntry } from '../../snapshot/snapshot.ts';
import { parseCountTokensRequest, parseMessagesRequest, type CountTokensRequest, type MessagesRequest } from '../protocols/anthropic-messages.ts';
import { anthropicMessagesCodec } from '../dispatch/messages-codec.ts';
import type { CallerRequest } from '../dispatch/attempt.ts';
import type { ProxyOptions } from '../proxy.ts';
import { serveParsed } from './serve.ts';

function messagesCall(request: MessagesRequest, key: ApiKeyEntry): CallerRequest {
  return {
    codec: anthropicMessagesCodec,
    operation: 'messages',
    body: request as unknown as Record<string, unknown>,
    alias: request.model,
    stream: request.stream === true,
    wantUsage: true,
    apiKey: key,
  };
}

function countTokensCall(request: CountTokensRequest, key: ApiKeyEntry): CallerRequest {
  return { codec: anthropicMessagesCodec, operation: 'count_tokens', body: request as unknown as Record<string, unknown>, alias: request.model, stream: false, wantUsage: false, apiKey: key };
}

export function messages(ctx: RequestContext, options: ProxyOptions): Promise<void> {
  return serveParsed(ctx, options, parseMessagesRequest, messagesCall);
}

export function countTokens(ctx: RequestContext, options: ProxyOptions): Promise<void> {
  return serveParsed(ctx, options, parseCountTokensRequest, countTokensCall, false);
}
