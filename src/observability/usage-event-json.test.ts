import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RequestContext } from '../http/context.ts';
import { servedChatContext } from '../../test/harness/served-context.ts';
import { usageEventMembersBytes } from './usage-event-json.ts';
import { completeUsageEvent, usageEventFrom, type UsageEvent } from './usage-events.ts';

function event(edit: (ctx: RequestContext) => void = () => {}): UsageEvent {
  const ctx = servedChatContext();
  ctx.usage = { promptTokens: 12, completionTokens: 7, totalTokens: 19, cachedTokens: 0 };
  ctx.downstreamFirstByteMs = 31.123456;
  edit(ctx);
  return completeUsageEvent(usageEventFrom(ctx));
}

const line = (e: UsageEvent): string => `{${Buffer.from(usageEventMembersBytes(e)).toString()}}\n`;

test('an emitted event\'s members are the text JSON.stringify writes for it', () => {
  const events = [
    event(),
    event((ctx) => {
      ctx.status = 502;
      ctx.errorKind = 'upstream_error';
      ctx.errorMessage = 'upstream said "no"\n\tand then: café ✓ \ud800';
      ctx.usage = undefined;
      ctx.stream = true;
      ctx.provider = undefined;
    }),
  ];
  const rich = event();
  rich.request_headers = { 'user-agent': 'sdk/1.0 "quoted"', 'x-team': 'équipe' };
  rich.applied_guardrails = [{ name: 'pii', kind: 'regex', hook: 'pre' }];
  rich.guardrail_enforced_hits = [{ guardrail_name: 'pii', hook: 'pre', action: 'mask', reason: 'email' }];
  rich.guardrail_monitor_hits = [{ guardrail_name: 'tone', hook: 'post', action: 'flag' }];
  rich.guardrail_blocked = true;
  rich.guardrail_bypassed_reason = 'header';
  rich.gateway_embedding_calls = { calls: [{ purpose: 'semantic', model: 'emb', status: 200, prompt_tokens: 3, usage_reported: true }], dropped: 1 };
  rich.passthrough_route_name = 'route-a';
  rich.client_identity = 'svc-1';
  rich.latency_ms = 1e-7;
  rich.ttft_ms = Number.NaN;
  events.push(rich);
  const withDroppedOnly = event();
  withDroppedOnly.gateway_embedding_calls = { calls: [], dropped: 3 };
  events.push(withDroppedOnly);
  for (const e of events) assert.equal(line(e), `${JSON.stringify(e)}\n`);
});

test('a line is serialised once per event: the next event gets its own text', () => {
  const a = event();
  const b = event((ctx) => (ctx.requestedModel = 'other'));
  const first = line(a);
  assert.equal(line(a), first);
  assert.equal(JSON.parse(line(b)).requested_model, 'other');
  assert.equal(JSON.parse(line(a)).requested_model, 'fast');
});

test('an event not completed (optional members absent) has those members left out, as JSON.stringify leaves them', () => {
  const e: UsageEvent = {
    type: 'usage', occurred_at: '2026-11-22T01:02:03.456Z', request_id: 'r', operation: 'passthrough', requested_model: '', model_id: '',
    provider: null, provider_key_id: null, api_key_id: null, status: 404, status_code: 404, error_class: 'route_not_found',
    error_message: 'no route', attempt_kind: 'initial', billable: false, stream: false, prompt_tokens: null, completion_tokens: null,
    total_tokens: null, cached_tokens: null, cache_creation_tokens: null, reasoning_tokens: null, latency_ms: 0.5, ttft_ms: null,
    passthrough_route_name: 'r1', client_identity: null,
  };
  assert.deepEqual(JSON.parse(line(e)), JSON.parse(JSON.stringify(e)));
  assert.equal(line(e), `${JSON.stringify(e)}\n`);
});
