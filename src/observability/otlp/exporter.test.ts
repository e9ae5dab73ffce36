import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startOtlpReceiver, type OtlpReceiver } from '../../../test/harness/otlp-receiver.ts';
import { completeUsageEvent, type UsageEvent } from '../usage-events.ts';
import { isRetryableStatus, OtlpExporterSet, OtlpHttpExporter, type DropReason, type OtlpExporterHooks } from './exporter.ts';
import { traceIdFor, usageEventToSpan } from './span.ts';

function event(over: Partial<UsageEvent> = {}): UsageEvent {
  return completeUsageEvent({
    type: 'usage',
    occurred_at: '2025-03-04T05:06:07.089Z',
    request_id: '0f8fad5b-d9cb-469f-a165-70867728950e',
    operation: 'chat',
    requested_model: 'fast',
    model_id: 'm-1',
    provider: 'openai',
    provider_key_id: 'pk-1',
    api_key_id: 'ak-1',
    status: 200,
    status_code: 200,
    error_class: null,
    error_message: null,
    attempt_kind: 'initial',
    billable: true,
    stream: false,
    prompt_tokens: 12,
    completion_tokens: 5,
    total_tokens: 17,
    cached_tokens: null,
    cache_creation_tokens: null,
    reasoning_tokens: null,
    latency_ms: 250,
    ttft_ms: 100,
    passthrough_route_name: null,
    client_identity: null,
    upstream_model: 'gpt-4o-mini',
    ...over,
  });
}

function recorder(): OtlpExporterHooks & { drops: Array<[DropReason, number]>; exportedCount: number; warnings: string[] } {
  const r = {
    drops: [] as Array<[DropReason, number]>,
    exportedCount: 0,
    warnings: [] as string[],
    exported: (_: string, n: number) => {
      r.exportedCount += n;
    },
    dropped: (_: string, reason: DropReason, n: number) => {
      r.drops.push([reason, n]);
    },
    warn: (_: string, message: string) => {
      r.warnings.push(message);
    },
  };
  return r;
}

const attr = (span: any, key: string): any => span.attributes.find((a: any) => a.key === key)?.value;
const FAST = { flushMs: 20, initialBackoffMs: 10, maxBackoffMs: 40 };

describe('usage event → span', () => {
  test('occurred_at is the end time; the start is end minus latency_ms', () => {
    const span = usageEventToSpan(event());
    const end = BigInt(Date.parse('2025-03-04T05:06:07.089Z')) * 1_000_000n;
    assert.equal(span.endTimeUnixNano, String(end));
    assert.equal(span.startTimeUnixNano, String(end - 250_000_000n));
  });

  test('GenAI attributes where they fit, tollgate.* for the rest, no status error on success', () => {
    const span = usageEventToSpan(event());
    assert.equal(span.name, 'chat fast');
    assert.deepEqual(attr(span, 'gen_ai.operation.name'), { stringValue: 'chat' });
    assert.deepEqual(attr(span, 'gen_ai.request.model'), { stringValue: 'fast' });
    assert.deepEqual(attr(span, 'gen_ai.response.model'), { stringValue: 'gpt-4o-mini' });
    assert.deepEqual(attr(span, 'gen_ai.provider.name'), { stringValue: 'openai' });
    assert.deepEqual(attr(span, 'gen_ai.usage.input_tokens'), { intValue: '12' });
    assert.deepEqual(attr(span, 'gen_ai.usage.output_tokens'), { intValue: '5' });
    assert.deepEqual(attr(span, 'http.response.status_code'), { intValue: '200' });
    assert.deepEqual(attr(span, 'tollgate.request_id'), { stringValue: '0f8fad5b-d9cb-469f-a165-70867728950e' });
    assert.deepEqual(attr(span, 'tollgate.billable'), { boolValue: true });
    assert.deepEqual(attr(span, 'tollgate.latency_ms'), { intValue: '250' });
    assert.deepEqual(attr(span, 'tollgate.applied_guardrails'), { stringValue: '[]' });
    assert.equal(attr(span, 'error.type'), undefined);
    assert.equal(attr(span, 'tollgate.error_class'), undefined, 'error_class travels as error.type');
    assert.deepEqual(span.status, { code: 0 });
    assert.equal(span.traceId, '0f8fad5bd9cb469fa16570867728950e');
    assert.match(span.spanId, /^[0-9a-f]{16}$/);
  });

  test('a failure sets error.type and an error status; captured headers become http.request.header.<name>', () => {
    const span = usageEventToSpan(event({ status: 502, status_code: 502, error_class: 'transport', error_message: 'upstream connection broke', request_headers: { 'x-team': 'blue' } }));
    assert.deepEqual(attr(span, 'error.type'), { stringValue: 'transport' });
    assert.deepEqual(span.status, { code: 2, message: 'upstream connection broke' });
    assert.deepEqual(attr(span, 'http.request.header.x-team'), { arrayValue: { values: [{ stringValue: 'blue' }] } });
  });

  test('a request id that is not a UUID still maps to a stable 32-hex trace id', () => {
    assert.match(traceIdFor('caller-id-1'), /^[0-9a-f]{32}$/);
    assert.equal(traceIdFor('caller-id-1'), traceIdFor('caller-id-1'));
    assert.notEqual(traceIdFor('caller-id-1'), traceIdFor('caller-id-2'));
  });
});

describe('delivery', () => {
  let rx: OtlpReceiver;
  before(async () => {
    rx = await startOtlpReceiver();
  });
  after(() => rx.close());
  beforeEach(() => rx.reset());

  test('408, 429 and 5xx are retryable; other 4xx are not', () => {
    for (const s of [408, 429, 500, 502, 503, 504]) assert.equal(isRetryableStatus(s), true, String(s));
    for (const s of [400, 401, 403, 404, 413, 422]) assert.equal(isRetryableStatus(s), false, String(s));
  });

  test('a batch POSTs JSON with the configured headers', async () => {
    const hooks = recorder();
    const ex = new OtlpHttpExporter({ name: 'rx', endpoint: rx.url, headers: { authorization: 'Bearer collector-token' }, sampleRate: 1 }, hooks, FAST);
    ex.emit(event());
    ex.emit(event({ request_id: 'second' }));
    await rx.waitForRequests(1);
    await ex.close();
    assert.equal(rx.received.length, 1, 'both events in one batch');
    assert.equal(rx.received[0].headers['content-type'], 'application/json');
    assert.equal(rx.received[0].headers.authorization, 'Bearer collector-token');
    assert.equal(rx.acceptedSpans().length, 2);
    assert.equal(rx.received[0].body.resourceSpans[0].resource.attributes[0].value.stringValue, 'tollgate');
    assert.equal(hooks.exportedCount, 2);
  });

  test('503 then 200: the batch is retried and delivered once', async () => {
    rx.script(503);
    const hooks = recorder();
    const ex = new OtlpHttpExporter({ name: 'rx', endpoint: rx.url, headers: {}, sampleRate: 1 }, hooks, FAST);
    ex.emit(event());
    await rx.waitForRequests(2);
    await ex.kick();
    await ex.close();
    assert.deepEqual(rx.received.map((r) => r.status), [503, 200]);
    assert.equal(rx.acceptedSpans().length, 1);
    assert.equal(hooks.exportedCount, 1);
    assert.deepEqual(hooks.drops, []);
  });

  test('408 and 429 are retried too (429 Retry-After honoured)', async () => {
    rx.script(408, { status: 429, headers: { 'retry-after': '0' } });
    const hooks = recorder();
    const ex = new OtlpHttpExporter({ name: 'rx', endpoint: rx.url, headers: {}, sampleRate: 1 }, hooks, FAST);
    ex.emit(event());
    await rx.waitForRequests(3);
    await ex.close();
    assert.deepEqual(rx.received.map((r) => r.status), [408, 429, 200]);
    assert.equal(hooks.exportedCount, 1);
  });

  test('400 drops the batch at once as permanent_error', async () => {
    rx.script(400);
    const hooks = recorder();
    const ex = new OtlpHttpExporter({ name: 'rx', endpoint: rx.url, headers: {}, sampleRate: 1 }, hooks, FAST);
    ex.emit(event());
    ex.emit(event());
    await rx.waitForRequests(1);
    await ex.kick();
    await new Promise((r) => setTimeout(r, 100));
    await ex.close();
    assert.equal(rx.received.length, 1, 'no retry after a 400');
    assert.deepEqual(hooks.drops, [['permanent_error', 2]]);
    assert.equal(hooks.exportedCount, 0);
    assert.equal(hooks.warnings.length, 1);
  });

  test('retries stop when the budget is spent: retry_budget_exhausted', async () => {
    rx.script(503, 503, 503, 503, 503, 503, 503, 503);
    const hooks = recorder();
    const ex = new OtlpHttpExporter({ name: 'rx', endpoint: rx.url, headers: {}, sampleRate: 1 }, hooks, { ...FAST, retryBudgetMs: 60 });
    ex.emit(event());
    await ex.kick();
    await ex.close();
    assert.ok(rx.received.length >= 2 && rx.received.length < 8, `${rx.received.length} attempts`);
    assert.deepEqual(hooks.drops, [['retry_budget_exhausted', 1]]);
  });

  test('a transport failure is retried within the budget, then dropped', async () => {
    const hooks = recorder();
    const ex = new OtlpHttpExporter({ name: 'rx', endpoint: 'http://127.0.0.1:1/v1/traces', headers: {}, sampleRate: 1 }, hooks, { ...FAST, retryBudgetMs: 50 });
    ex.emit(event());
    await ex.kick();
    await ex.close();
    assert.deepEqual(hooks.drops, [['retry_budget_exhausted', 1]]);
  });

  test('a full queue drops new events as queue_full', async () => {
    const hooks = recorder();
    const ex = new OtlpHttpExporter({ name: 'rx', endpoint: rx.url, headers: {}, sampleRate: 1 }, hooks, { ...FAST, flushMs: 60_000, maxQueue: 2, batchSize: 100 });
    for (let i = 0; i < 5; i++) ex.emit(event());
    assert.equal(ex.queued, 2);
    assert.deepEqual(hooks.drops, [['queue_full', 1], ['queue_full', 1], ['queue_full', 1]]);
    await ex.close();
  });

  test('sample_rate keeps a stable share of requests, all rows of a request together', async () => {
    const none = new OtlpHttpExporter({ name: 'rx', endpoint: rx.url, headers: {}, sampleRate: 0 }, recorder(), { ...FAST, flushMs: 60_000 });
    none.emit(event());
    assert.equal(none.queued, 0);
    await none.close();
    const half = new OtlpHttpExporter({ name: 'rx', endpoint: rx.url, headers: {}, sampleRate: 0.5 }, recorder(), { ...FAST, flushMs: 60_000, batchSize: 10_000 });
    for (let i = 0; i < 400; i++) {
      half.emit(event({ request_id: `r-${i}` }));
      half.emit(event({ request_id: `r-${i}` }));
    }
    assert.equal(half.queued % 2, 0, 'both rows of a request are kept or both dropped');
    assert.ok(half.queued > 200 && half.queued < 600, `${half.queued} of 800 kept`);
    // Not closed: closing would deliver the queue into the next test's receiver.
  });

  test('the set keeps an unchanged exporter across updates and drops removed ones', async () => {
    const set = new OtlpExporterSet(recorder(), FAST);
    set.update([{ name: 'a', endpoint: rx.url, headers: {}, sampleRate: 1 }]);
    assert.equal(set.size, 1);
    set.update([{ name: 'a', endpoint: rx.url, headers: {}, sampleRate: 1 }, { name: 'b', endpoint: rx.url, headers: {}, sampleRate: 1 }]);
    assert.equal(set.size, 2);
    set.emit(event());
    await rx.waitForRequests(2);
    set.update([]);
    assert.equal(set.size, 0);
    set.emit(event());
    await set.close();
    assert.equal(rx.acceptedSpans().length, 2, 'one span per exporter, none after removal');
  });
});
