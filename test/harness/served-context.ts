// A RequestContext as a served chat completion leaves it at finalize (attribution, tokens,
// timings), for the tests and benches of the per-request records (usage event, access line,
// span). Callers change what their case needs after.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { RequestContext } from '../../src/http/context.ts';

export function servedChatContext(requestId = '0b6e2f7a-93c4-4e8b-9d1a-5f0c2e7b8a31', clientIp = '127.0.0.1'): RequestContext {
  const req = { method: 'POST', headers: {} } as unknown as IncomingMessage;
  const ctx = new RequestContext(req, {} as ServerResponse, requestId, clientIp);
  ctx.endpoint = '/v1/chat/completions';
  ctx.operation = 'chat';
  ctx.status = 200;
  ctx.requestedModel = 'fast';
  ctx.model = 'fast';
  ctx.modelId = 'm-1';
  ctx.provider = 'openai';
  ctx.providerKeyId = 'pk-1';
  ctx.apiKeyId = 'k-1';
  ctx.upstreamModel = 'gpt-4o-mini';
  ctx.usage = { promptTokens: 12, completionTokens: 7, totalTokens: 19 };
  ctx.upstreamSentMs = 1.25;
  ctx.upstreamFirstByteMs = 30.001;
  ctx.upstreamEndMs = 70.5;
  ctx.downstreamFirstByteMs = 31.123;
  return ctx;
}
