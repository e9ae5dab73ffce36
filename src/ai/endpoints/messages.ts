// POST /v1/messages and /v1/messages/count_tokens: the Anthropic Messages endpoints. Native for
// messages-family targets, translated through canonical chat for every other target; token
// counting is native only.
import type { RequestContext } from '../../http/context.ts';
import { readBody } from '../../http/body.ts';
import { parseCountTokensRequest, parseMessagesRequest } from '../protocols/anthropic-messages.ts';
import { anthropicMessagesCodec } from '../dispatch/messages-codec.ts';
import { dispatch } from '../dispatch/core.ts';
import { authenticate, currentSnapshot, resolveModel } from '../phases.ts';
import type { ProxyOptions } from '../proxy.ts';
import { admitLimits } from '../../limits/admit.ts';

export async function messages(ctx: RequestContext, options: ProxyOptions): Promise<void> {
  ctx.operation = 'messages';
  const snapshot = currentSnapshot(options.snapshots);
  const key = authenticate(ctx, snapshot);
  const request = parseMessagesRequest(await readBody(ctx, options.bodyLimitBytes));
  ctx.stream = request.stream === true;
  const resolved = resolveModel(ctx, snapshot, key, request.model);
  await admitLimits(ctx, options.limits, snapshot, key, resolved.entry, anthropicMessagesCodec);
  await dispatch(ctx, {
    codec: anthropicMessagesCodec,
    operation: 'messages',
    body: request as unknown as Record<string, unknown>,
    alias: request.model,
    stream: ctx.stream,
    wantUsage: true,
  }, resolved, { snapshot, settings: options.upstream, health: options.health, usage: options.usage });
}

export async function countTokens(ctx: RequestContext, options: ProxyOptions): Promise<void> {
  ctx.operation = 'count_tokens';
  const snapshot = currentSnapshot(options.snapshots);
  const key = authenticate(ctx, snapshot);
  const request = parseCountTokensRequest(await readBody(ctx, options.bodyLimitBytes));
  const resolved = resolveModel(ctx, snapshot, key, request.model);
  await dispatch(ctx, {
    codec: anthropicMessagesCodec,
    operation: 'count_tokens',
    body: request as unknown as Record<string, unknown>,
    alias: request.model,
    stream: false,
    wantUsage: false,
  }, resolved, { snapshot, settings: options.upstream, health: options.health, usage: options.usage });
}
