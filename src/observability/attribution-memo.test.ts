import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeSpan } from '../../test/harness/otlp-proto.ts';
import { servedChatContext } from '../../test/harness/served-context.ts';
import type { RequestContext } from '../http/context.ts';
import { reportRequest } from './access-log.ts';
import { attributionMemo, KEPT_ATTRIBUTIONS } from './attribution-memo.ts';
import { Metrics } from './metrics.ts';
import { encodeUsageEventSpan, EXPORTED_FIELDS } from './otlp/span.ts';
import { usageEventMembers } from './usage-event-json.ts';
import { completeUsageEvent, usageEventFrom, type UsageEvent } from './usage-events.ts';

function base(): UsageEvent {
  const ctx = servedChatContext();
  ctx.usage = { promptTokens: 12, completionTokens: 7, totalTokens: 19, cachedTokens: 0 };
  const e = completeUsageEvent(usageEventFrom(ctx));
  e.occurred_at = '2026-11-22T04:05:06.789Z';
  e.latency_ms = 70.5;
  e.downstream_latency_ms = 70.5;
  e.request_headers = { 'x-team': 'blue', 'user-agent': 'sdk/1' };
  return e;
}

/** For every field of an event, events that differ from base() in that field only. */
const VARIANTS: Record<keyof UsageEvent, Array<Partial<UsageEvent>>> = {
  type: [],
  occurred_at: [{ occurred_at: '2026-11-22T04:05:07.001Z' }],
  request_id: [{ request_id: 'req-"other"' }],
  operation: [{ operation: 'embeddings' }],
  requested_model: [{ requested_model: 'slow' }, { requested_model: '' }],
  model_id: [{ model_id: 'm-2' }],
  provider: [{ provider: 'anthropic' }, { provider: null }],
  provider_key_id: [{ provider_key_id: 'pk-2' }, { provider_key_id: null }],
  api_key_id: [{ api_key_id: 'k-2' }, { api_key_id: null }],
  status: [{ status: 502 }],
  status_code: [{ status_code: 502 }],
  error_class: [{ error_class: 'upstream_error' }],
  error_message: [{ error_message: 'upstream said "no" ✓' }],
  attempt_kind: [{ attempt_kind: 'fallback' }],
  billable: [{ billable: false }],
  stream: [{ stream: true }],
  prompt_tokens: [{ prompt_tokens: 13 }, { prompt_tokens: null }],
  completion_tokens: [{ completion_tokens: 8 }],
  total_tokens: [{ total_tokens: 20 }, { total_tokens: null }],
  cached_tokens: [{ cached_tokens: 4 }],
  cache_creation_tokens: [{ cache_creation_tokens: 5 }],
  reasoning_tokens: [{ reasoning_tokens: 6 }],
  latency_ms: [{ latency_ms: 71.5 }],
  ttft_ms: [{ ttft_ms: 29.5 }, { ttft_ms: null }],
  passthrough_route_name: [{ passthrough_route_name: 'route-a' }],
  client_identity: [{ client_identity: 'svc-1' }],
  upstream_model: [{ upstream_model: 'gpt-4o' }, { upstream_model: null }],
  downstream_latency_ms: [{ downstream_latency_ms: 72.25 }],
  downstream_ttft_ms: [{ downstream_ttft_ms: 33 }],
  upstream_latency_ms: [{ upstream_latency_ms: 80 }],
  upstream_ttft_ms: [{ upstream_ttft_ms: 40 }],
  applied_guardrails: [{ applied_guardrails: [{ name: 'pii', kind: 'regex', hook: 'pre' }] }],
  guardrail_blocked: [{ guardrail_blocked: true }],
  guardrail_blocked_fail_closed: [{ guardrail_blocked_fail_closed: true }],
  guardrail_bypassed_reason: [{ guardrail_bypassed_reason: 'header' }],
  guardrail_enforced_hits: [{ guardrail_enforced_hits: [{ guardrail_name: 'pii', hook: 'pre', action: 'mask' }] }],
  guardrail_monitor_hits: [{ guardrail_monitor_hits: [{ guardrail_name: 'tone', hook: 'post', action: 'flag' }] }],
  request_headers: [
    { request_headers: { 'x-team': 'red', 'user-agent': 'sdk/1' } },
    { request_headers: { 'user-agent': 'sdk/1', 'x-team': 'blue' } },
    { request_headers: { 'x-team': 'blue' } },
    { request_headers: { 'x-team': 'blue', 'user-agent': 'sdk/1', 'x-tenant': 't' } },
    { request_headers: {} },
  ],
  gateway_embedding_calls: [
    { gateway_embedding_calls: { calls: [], dropped: 2 } },
    { gateway_embedding_calls: { calls: [{ purpose: 'semantic', model: 'emb', status: 200, prompt_tokens: 3, usage_reported: true }], dropped: 0 } },
  ],
};

function variants(): Array<[string, UsageEvent]> {
  const out: Array<[string, UsageEvent]> = [];
  for (const field of Object.keys(EXPORTED_FIELDS) as (keyof UsageEvent)[]) {
    if (field !== 'type') assert.ok(VARIANTS[field].length > 0, `no variant of ${field}`);
    for (const v of VARIANTS[field]) out.push([`${field}=${JSON.stringify(v[field])}`, { ...base(), ...v }]);
  }
  return out;
}

/** An event unlike base() in every attribution field, to reset the serialisers' kept text. */
function unlike(): UsageEvent {
  return {
    ...base(), operation: 'messages', requested_model: 'x', model_id: 'x', provider: 'x', provider_key_id: 'x', api_key_id: 'x',
    status: 401, status_code: 401, error_class: 'auth', error_message: 'x', attempt_kind: 'retry', billable: false, stream: true,
    passthrough_route_name: 'x', client_identity: 'x', upstream_model: 'x', guardrail_bypassed_reason: 'x', request_headers: { x: 'x' },
  };
}

test('the usage line of every event is JSON.stringify\'s text, whichever event came before it', () => {
  for (const [name, e] of variants()) {
    usageEventMembers(base());
    assert.equal(`{${usageEventMembers(e)}}`, JSON.stringify(e), `${name}, after base`);
    usageEventMembers(unlike());
    assert.equal(`{${usageEventMembers(e)}}`, JSON.stringify(e), `${name}, after another attribution`);
    assert.equal(`{${usageEventMembers(e)}}`, JSON.stringify(e), `${name}, after itself`);
  }
});

test('the span of every event is the same whichever event came before it', () => {
  const span = (e: UsageEvent): Record<string, unknown> => {
    const s = decodeSpan(encodeUsageEventSpan(e)) as unknown as Record<string, unknown>;
    delete s.spanId;
    return s;
  };
  span(unlike());
  const baseSpan = span(base());
  for (const [name, e] of variants()) {
    span(unlike());
    const fresh = span(e);
    assert.deepEqual(span(base()), baseSpan, `base, after ${name}`);
    assert.deepEqual(span(e), fresh, `${name}, after base`);
    assert.deepEqual(span(e), fresh, `${name}, after itself`);
  }
  // And the attribution is really there: a field of base() that unlike() changes.
  span(base());
  const attrs = span(unlike()).attributes as Array<{ key: string; value: { stringValue?: string } }>;
  assert.equal(attrs.find((a) => a.key === 'tollgate.api_key_id')?.value.stringValue, 'x');
});

test('an attribution memo makes its value again exactly when an attribution field differs', () => {
  let made = 0;
  const memo = attributionMemo((e) => `${++made}:${e.model_id}`);
  const perEvent = new Set(['occurred_at', 'request_id', 'prompt_tokens', 'completion_tokens', 'total_tokens', 'cached_tokens',
    'cache_creation_tokens', 'reasoning_tokens', 'latency_ms', 'ttft_ms', 'downstream_latency_ms', 'downstream_ttft_ms',
    'upstream_latency_ms', 'upstream_ttft_ms']);
  for (const [name, e] of variants()) {
    memo.get(base());
    const before = made;
    memo.get(e);
    const field = name.slice(0, name.indexOf('='));
    assert.equal(made - before, perEvent.has(field) ? 0 : 1, name);
  }
  // A field changed on the very object last seen is still seen (the memo keeps a copy).
  const e = base();
  memo.get(e);
  e.model_id = 'changed';
  assert.match(memo.get(e), /:changed$/);
  e.request_headers!['x-team'] = 'green';
  const before = made;
  memo.get(e);
  assert.equal(made, before + 1);
  // So is a list changed in place: a list with items is never taken for the one seen before.
  e.guardrail_enforced_hits = [{ guardrail_name: 'pii', hook: 'pre', action: 'mask' }];
  memo.get(e);
  e.guardrail_enforced_hits.push({ guardrail_name: 'tone', hook: 'post', action: 'flag' });
  memo.get(e);
  assert.equal(made, before + 3);
});

test('the usage line of an event whose guardrail list changed in place after it was written is still JSON.stringify\'s text', () => {
  const e = base();
  e.guardrail_monitor_hits = [{ guardrail_name: 'tone', hook: 'post', action: 'flag' }];
  assert.equal(`{${usageEventMembers(e)}}`, JSON.stringify(e));
  e.guardrail_monitor_hits.push({ guardrail_name: 'pii', hook: 'pre', action: 'mask' });
  const again = { ...e };
  assert.equal(`{${usageEventMembers(again)}}`, JSON.stringify(again));
});

test('callers taking turns keep their attribution\'s text, up to KEPT_ATTRIBUTIONS of them', () => {
  let made = 0;
  const memo = attributionMemo((e) => `${++made}:${e.api_key_id}`);
  const callers = Array.from({ length: KEPT_ATTRIBUTIONS }, (_, i) => ({ ...base(), api_key_id: `k-${i}` }));
  for (let round = 0; round < 3; round++) for (const e of callers) assert.equal(memo.get({ ...e, request_id: `r-${round}` }).split(':')[1], e.api_key_id);
  assert.equal(made, KEPT_ATTRIBUTIONS);
});

test('the access line of every request is the same whichever request came before it', () => {
  const lines: string[] = [];
  const sinks = { metrics: new Metrics(), accessLog: (l: string) => lines.push(l) };
  const line = (ctx: RequestContext): Record<string, unknown> => {
    reportRequest(ctx, sinks, '2026-11-22T01:02:03.456Z');
    const parsed = JSON.parse(lines[lines.length - 1]) as Record<string, unknown>;
    delete parsed.latency_ms; // the clock's, not the request's
    return parsed;
  };
  const edits: Array<[string, (ctx: RequestContext) => void]> = [
    ['method', (c) => (c.req.method = 'GET')],
    ['method absent', (c) => (c.req.method = undefined)],
    ['endpoint', (c) => (c.endpoint = '/v1/embeddings')],
    ['status', (c) => (c.status = 404)],
    ['apiKeyId', (c) => (c.apiKeyId = 'k-2')],
    ['apiKeyName', (c) => (c.apiKeyName = 'blue')],
    ['model', (c) => (c.model = 'slow')],
    ['provider', (c) => (c.provider = undefined)],
    ['providerKeyId', (c) => (c.providerKeyId = 'pk-2')],
    ['upstreamModel', (c) => (c.upstreamModel = 'gpt-4o')],
    ['stream', (c) => (c.stream = true)],
    ['attempts', (c) => (c.attempts = 3)],
    ['fallbacks', (c) => (c.fallbacks = 2)],
  ];
  const make = (edit?: (ctx: RequestContext) => void, ip?: string): RequestContext => {
    const ctx = servedChatContext('r', ip);
    ctx.attempts = 1;
    edit?.(ctx);
    return ctx;
  };
  const cases: Array<[string, () => RequestContext]> = [
    ...edits.map(([name, edit]): [string, () => RequestContext] => [name, () => make(edit)]),
    ['clientIp', () => make(undefined, '10.1.2.3')],
  ];
  const reference = line(make());
  for (const [name, ctx] of cases) {
    const alone = line(ctx());
    assert.deepEqual(line(make()), reference, `the reference request, after ${name}`);
    assert.deepEqual(line(ctx()), alone, `${name}, after the reference request`);
    assert.notDeepEqual(alone, reference, `${name} changes the line`);
  }
});
