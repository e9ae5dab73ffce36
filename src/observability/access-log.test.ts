import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { RequestContext } from '../http/context.ts';
import { reportRequest, type FinalizeSinks } from './access-log.ts';
import { Metrics } from './metrics.ts';
import { servedChatContext } from '../../test/harness/served-context.ts';

function finished(ctx: RequestContext): { ctx: RequestContext; line: string } {
  const lines: string[] = [];
  const sinks: FinalizeSinks = { metrics: new Metrics(), accessLog: (l) => lines.push(l) };
  reportRequest(ctx, sinks, '2026-11-22T01:02:03.456Z');
  assert.equal(lines.length, 1);
  return { ctx, line: lines[0] };
}

const ms = (v: number | undefined): number | undefined => (v === undefined ? undefined : Math.round(v * 1000) / 1000);

/** The line's object as JSON.stringify would write it: members in this order, undefined ones left out. */
function expected(ctx: RequestContext): string {
  return `${JSON.stringify({
    level: 'info', time: '2026-11-22T01:02:03.456Z', service: 'tollgate', type: 'access', request_id: ctx.requestId,
    method: ctx.req.method, path: ctx.endpoint, status: ctx.status, latency_ms: ms(ctx.latencyMs()),
    upstream_first_byte_ms: ms(ctx.upstreamFirstByteMs), downstream_ttft_ms: ms(ctx.downstreamFirstByteMs),
    upstream_latency_ms: ctx.upstreamSentMs === undefined || ctx.upstreamEndMs === undefined ? undefined : ms(ctx.upstreamEndMs - ctx.upstreamSentMs),
    client_ip: ctx.clientIp, api_key_id: ctx.apiKeyId, api_key_name: ctx.apiKeyName, model: ctx.model, provider: ctx.provider,
    provider_key_id: ctx.providerKeyId, upstream_model: ctx.upstreamModel, stream: ctx.stream, attempts: ctx.attempts, fallbacks: ctx.fallbacks,
    prompt_tokens: ctx.usage?.promptTokens, completion_tokens: ctx.usage?.completionTokens, total_tokens: ctx.usage?.totalTokens,
    request_body_bytes: ctx.requestBytes, response_body_bytes: ctx.responseBytes, error_kind: ctx.errorKind, error: ctx.errorMessage,
    msg: 'request completed',
  })}\n`;
}

test('the access line of a served request: every member, in order, as JSON.stringify writes it', () => {
  const served = servedChatContext('req-1', '10.0.0.7');
  served.apiKeyName = 'team "blue" key';
  served.stream = true;
  served.attempts = 2;
  served.fallbacks = 1;
  served.requestBytes = 321;
  served.responseBytes = 4567;
  served.upstreamFirstByteMs = 12.3456;
  const { ctx, line } = finished(served);
  assert.equal(line, expected(ctx));
  assert.equal(JSON.parse(line).api_key_name, 'team "blue" key');
});

test('a refused request: members it never had are left out; error text with escapes and non-ASCII survives', () => {
  const req = { method: 'GET', headers: {} } as unknown as IncomingMessage;
  const refused = new RequestContext(req, {} as ServerResponse, 'req-2', '10.0.0.7');
  refused.endpoint = '/v1/models';
  refused.status = 401;
  refused.fail('auth', 'Invalid API key\n\t“é”');
  const { ctx, line } = finished(refused);
  assert.equal(line, expected(ctx));
  const parsed = JSON.parse(line);
  for (const absent of ['api_key_id', 'model', 'prompt_tokens', 'upstream_first_byte_ms']) assert.ok(!(absent in parsed), absent);
  assert.equal(parsed.error, 'Invalid API key\n\t“é”');
});
