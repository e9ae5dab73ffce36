// POST /v1/chat/completions: the OpenAI Chat Completions endpoint.
import type { RequestContext } from '../../http/context.ts';
import { readBody } from '../../http/body.ts';
import { parseChatRequest } from '../protocols/openai-chat.ts';
import { openAIChatCodec } from '../dispatch/codecs.ts';
import { authenticate, currentSnapshot, parseRequest } from '../phases.ts';
import type { ProxyOptions } from '../proxy.ts';
import { serveModel } from './serve.ts';

export async function chatCompletions(ctx: RequestContext, options: ProxyOptions): Promise<void> {
  const snapshot = currentSnapshot(options.snapshots);
  const key = authenticate(ctx, snapshot);
  const request = parseRequest(ctx, await readBody(ctx, options.bodyLimitBytes), parseChatRequest);
  await serveModel(ctx, options, snapshot, key, {
    codec: openAIChatCodec,
    operation: 'chat',
    body: request,
    alias: request.model,
    stream: request.stream === true,
    wantUsage: request.stream_options?.include_usage === true,
    apiKey: key,
  });
}
