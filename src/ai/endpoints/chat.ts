// POST /v1/chat/completions: the OpenAI Chat Completions endpoint.
import type { RequestContext } from '../../http/context.ts';
import { readBody } from '../../http/body.ts';
import { parseChatRequest } from '../protocols/openai-chat.ts';
import { openAIChatCodec } from '../dispatch/codecs.ts';
import { dispatch } from '../dispatch/core.ts';
import { authenticate, currentSnapshot, resolveModel } from '../phases.ts';
import type { ProxyOptions } from '../proxy.ts';
import { admitLimits } from '../../limits/admit.ts';

export async function chatCompletions(ctx: RequestContext, options: ProxyOptions): Promise<void> {
  ctx.operation = 'chat';
  const snapshot = currentSnapshot(options.snapshots);
  const key = authenticate(ctx, snapshot);
  const request = parseChatRequest(await readBody(ctx, options.bodyLimitBytes));
  ctx.stream = request.stream === true;
  const resolved = resolveModel(ctx, snapshot, key, request.model);
  await admitLimits(ctx, options.limits, snapshot, key, resolved.entry, openAIChatCodec);
  await dispatch(ctx, {
    codec: openAIChatCodec,
    operation: 'chat',
    body: request,
    alias: request.model,
    stream: ctx.stream,
    wantUsage: request.stream_options?.include_usage === true,
  }, resolved, { snapshot, settings: options.upstream, health: options.health, usage: options.usage });
}
