// POST /v1/messages and /v1/messages/count_tokens: the Anthropic Messages endpoints. Native for
// messages-family targets, translated through canonical chat for every other target; token
// counting is native only (and not counted against request limits).
import type { RequestContext } from '../../http/context.ts';
import { readBody } from '../../http/body.ts';
import { parseCountTokensRequest, parseMessagesRequest } from '../protocols/anthropic-messages.ts';
import { anthropicMessagesCodec } from '../dispatch/messages-codec.ts';
import { authenticate, currentSnapshot, parseRequest } from '../phases.ts';
import type { ProxyOptions } from '../proxy.ts';
import { serveModel } from './serve.ts';

export async function messages(ctx: RequestContext, options: ProxyOptions): Promise<void> {
  const snapshot = currentSnapshot(options.snapshots);
  const key = authenticate(ctx, snapshot);
  const request = parseRequest(ctx, await readBody(ctx, options.bodyLimitBytes), parseMessagesRequest);
  await serveModel(ctx, options, snapshot, key, {
    codec: anthropicMessagesCodec,
    operation: 'messages',
    body: request as unknown as Record<string, unknown>,
    alias: request.model,
    stream: request.stream === true,
    wantUsage: true,
    apiKey: key,
  });
}

export async function countTokens(ctx: RequestContext, options: ProxyOptions): Promise<void> {
  const snapshot = currentSnapshot(options.snapshots);
  const key = authenticate(ctx, snapshot);
  const request = parseRequest(ctx, await readBody(ctx, options.bodyLimitBytes), parseCountTokensRequest);
  const call = { codec: anthropicMessagesCodec, operation: 'count_tokens', body: request as unknown as Record<string, unknown>, alias: request.model, stream: false, wantUsage: false, apiKey: key } as const;
  await serveModel(ctx, options, snapshot, key, call, false);
}
