import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { RequestContext } from '../http/context.ts';
import { captureRequestHeaders, LogUsageSink, MAX_CAPTURED_HEADER_CHARS, MemoryUsageSink, UsageEmitter, usageEventFrom, type UsageEvent, type UsageRequest } from './usage-events.ts';
import type { ContentCapture } from './content-capture.ts';
import { pino } from 'pino';
import { createLogger } from './logger.ts';
import { LineBatcher } from './log-destination.ts';
import { servedChatContext } from '../../test/harness/served-context.ts';

function context(): RequestContext {
  const req = { method: 'POST', headers: {} } as unknown as IncomingMessage;
  return new RequestContext(req, {} as ServerResponse, 'req-1', '127.0.0.1');
}

/** Every field spec 2 §6.1 names, plus attribution and timing, on every emitted event. */
const FIELDS = [
  'type', 'occurred_at', 'request_id', 'operation', 'requested_model', 'model_id', 'provider', 'provider_key_id', 'api_key_id',
  'status', 'status_code', 'error_class', 'error_message', 'attempt_kind', 'billable', 'stream',
  'prompt_tokens', 'completion_tokens', 'total_tokens', 'cached_tokens', 'cache_creation_tokens', 'reasoning_tokens',
  'latency_ms', 'ttft_ms', 'passthrough_route_name', 'client_identity', 'upstream_model',
  'downstream_latency_ms', 'downstream_ttft_ms', 'upstream_latency_ms', 'upstream_ttft_ms',
  'applied_guardrails', 'guardrail_blocked', 'guardrail_blocked_fail_closed', 'guardrail_bypassed_reason',
  'guardrail_enforced_hits', 'guardrail_monitor_hits', 'request_headers', 'gateway_embedding_calls',
].sort();

test('a terminal row carries every field, occurred_at with milliseconds, tokens as reported', () => {
  const ctx = servedChatContext('req-1');
  ctx.usage = { promptTokens: 0, completionTokens: 7, totalTokens: 0, reasoningTokens: 2 };
  ctx.upstreamSentMs = 10;
  ctx.upstreamFirstByteMs = 30;
  ctx.upstreamEndMs = 70;
  ctx.downstreamFirstByteMs = 31;
  const sink = new MemoryUsageSink();
  new UsageEmitter([sink]).emit(usageEventFrom(ctx));
  const e = sink.events[0];
  assert.deepEqual(Object.keys(e).sort(), FIELDS);
  assert.match(e.occurred_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  assert.equal(e.prompt_tokens, 0, 'stored as reported');
  assert.equal(e.completion_tokens, 7);
  assert.equal(e.total_tokens, null, 'a reported total of 0 is stored as null');
  assert.equal(e.reasoning_tokens, 2);
  assert.equal(e.provider_key_id, 'pk-1');
  assert.equal(e.upstream_model, 'gpt-4o-mini');
  assert.equal(e.upstream_ttft_ms, 20);
  assert.equal(e.upstream_latency_ms, 60);
  assert.equal(e.downstream_ttft_ms, 31);
  assert.equal(e.downstream_latency_ms, e.latency_ms);
  assert.equal(e.billable, true);
  assert.deepEqual(e.applied_guardrails, []);
  assert.equal(e.guardrail_blocked, false);
  assert.equal(e.guardrail_blocked_fail_closed, false);
  assert.equal(e.guardrail_bypassed_reason, null);
  assert.deepEqual(e.guardrail_enforced_hits, []);
  assert.deepEqual(e.guardrail_monitor_hits, []);
  assert.deepEqual(e.gateway_embedding_calls, { calls: [], dropped: 0 });
  assert.deepEqual(e.request_headers, {});
});

test('a failed-attempt row has zero tokens, is not billable and has no timings of the serving attempt', () => {
  const ctx = context();
  ctx.operation = 'chat';
  ctx.upstreamSentMs = 1;
  ctx.upstreamEndMs = 2;
  const e = usageEventFrom(ctx, { modelId: 'm-2', status: 502, errorClass: 'upstream_status', errorMessage: 'upstream returned 503', billable: false });
  assert.equal(e.prompt_tokens, 0);
  assert.equal(e.completion_tokens, 0);
  assert.equal(e.billable, false);
  assert.equal(e.upstream_latency_ms, null);
  assert.equal(e.error_class, 'upstream_status');
});

test('events a producer built by hand (pass-through) are completed with the neutral values', () => {
  const sink = new MemoryUsageSink();
  const partial = { ...usageEventFrom(context()) } as Partial<UsageEvent>;
  for (const k of ['upstream_model', 'downstream_latency_ms', 'downstream_ttft_ms', 'upstream_latency_ms', 'upstream_ttft_ms', 'applied_guardrails', 'guardrail_blocked', 'guardrail_blocked_fail_closed', 'guardrail_bypassed_reason', 'guardrail_enforced_hits', 'guardrail_monitor_hits', 'request_headers', 'gateway_embedding_calls'] as const) delete partial[k];
  new UsageEmitter([sink]).emit(partial as UsageEvent);
  assert.deepEqual(Object.keys(sink.events[0]).sort(), FIELDS);
  assert.equal(sink.events[0].downstream_latency_ms, sink.events[0].latency_ms);
});

test('the emitter captures only the configured request headers, by lowercase name', () => {
  const sink = new MemoryUsageSink();
  const emitter = new UsageEmitter([sink], { requestHeaders: ['X-Team', 'x-tenant'] });
  emitter.emit(usageEventFrom(context()), { headers: { 'x-team': 'blue', 'x-other': 'no', authorization: 'Bearer secret' } });
  assert.deepEqual(sink.events[0].request_headers, { 'x-team': 'blue' });
  assert.deepEqual(captureRequestHeaders({ 'x-a': ['1', '2'] }, ['x-a']), { 'x-a': '1, 2' });
  assert.equal(captureRequestHeaders({ 'x-a': 'v'.repeat(5000) }, ['x-a'])['x-a'].length, MAX_CAPTURED_HEADER_CHARS);
});

test("a route's own gateway-key header is never captured, even when request_headers lists it", () => {
  const sink = new MemoryUsageSink();
  const emitter = new UsageEmitter([sink], { requestHeaders: ['x-gw-key', 'x-team'] });
  const headers = { 'x-gw-key': 'sk-gateway-secret', 'x-team': 'blue' };
  emitter.emit(usageEventFrom(context()), { headers, credentialHeader: 'x-gw-key' });
  assert.deepEqual(sink.events[0].request_headers, { 'x-team': 'blue' });
  // On a request that did not authenticate with it, the header is an ordinary one.
  emitter.emit(usageEventFrom(context()), { headers });
  assert.deepEqual(sink.events[1].request_headers, headers);
});

test('a failing sink is counted and never stops the others', () => {
  const sink = new MemoryUsageSink();
  const counted: string[] = [];
  const rejected: string[] = [];
  const emitter = new UsageEmitter([{ name: 'broken', sink: { emit: () => { throw new Error('disk full'); } } }, { name: 'mem', sink }], {
    counters: { emitted: (e) => counted.push(e.operation), rejected: (s, r) => rejected.push(`${s}:${r}`) },
  });
  const e = usageEventFrom(context());
  emitter.emit(e);
  assert.equal(sink.events.length, 1);
  assert.deepEqual(counted, ['unknown']);
  assert.deepEqual(rejected, ['broken:sink_error']);
});

test('LogUsageSink writes one JSON line: the log frame fields, then the event unchanged', () => {
  const lines: string[] = [];
  const logger = createLogger('info', true);
  const stream = (logger as unknown as Record<symbol, { write(s: string): unknown }>)[pino.symbols.streamSym];
  const original = stream.write;
  stream.write = (s: string) => lines.push(s);
  try {
    const event = usageEventFrom(context());
    new LogUsageSink(logger).emit(event);
    assert.equal(lines.length, 1);
    assert.ok(lines[0].endsWith('}\n'));
    const parsed = JSON.parse(lines[0]);
    assert.equal(parsed.level, 'info');
    assert.equal(parsed.service, 'tollgate');
    assert.equal(parsed.time, event.occurred_at);
    assert.equal(parsed.msg, 'usage');
    const { level: _l, service: _s, time: _t, msg: _m, ...rest } = parsed;
    assert.deepEqual(rest, JSON.parse(JSON.stringify(event)));
  } finally {
    stream.write = original;
  }
});

test('content capture: the emitter wants the largest amount its sinks ask for, and passes content beside the event only', () => {
  assert.equal(new UsageEmitter([new MemoryUsageSink()]).contentCapture(), 0, 'no sink asks: capture is off');
  let limit = 100;
  const seen: unknown[] = [];
  const capturing = { emit: (_e: UsageEvent, req?: UsageRequest) => seen.push(req?.content), contentCapture: () => limit };
  const mem = new MemoryUsageSink();
  const emitter = new UsageEmitter([mem, capturing, { emit: () => {}, contentCapture: () => 40 }]);
  assert.equal(emitter.contentCapture(), 100);
  limit = 0;
  assert.equal(emitter.contentCapture(), 40, 'read on every call: follows reloads');
  const content = { content: () => ({ request: 'secret prompt', response: 'answer', truncated: false }) } as unknown as ContentCapture;
  emitter.emit(usageEventFrom(context()), { headers: {}, content });
  assert.deepEqual(seen, [content]);
  assert.ok(!JSON.stringify(mem.events[0]).includes('secret prompt'), 'the event never holds content');
});

test('LogUsageSink counts the events the log stream drops, and no other lines', () => {
  // A stderr nobody reads, behind a queue too small for any line: every line is dropped.
  const batcher = new LineBatcher(2, { batchBytes: 1, maxQueuedBytes: 100, write: () => {} });
  const logger = pino({ level: 'info' }, batcher);
  const dropped: Array<[number, string]> = [];
  const sink = new LogUsageSink(logger, (n, reason) => dropped.push([n, reason]));
  for (let i = 0; i < 3; i++) sink.emit(usageEventFrom(context()));
  logger.info('an ordinary log line, dropped too but not a usage event');
  assert.deepEqual(dropped, [[1, 'backlog_full'], [1, 'backlog_full'], [1, 'backlog_full']]);
});
