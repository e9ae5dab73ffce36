import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type net from 'node:net';
import { startOtlpReceiver, startSilentCollector, type OtlpReceiver } from '../../../test/harness/otlp-receiver.ts';
import { completeUsageEvent, type UsageEvent } from '../usage-events.ts';
import type { ContentCapture } from '../content-capture.ts';
import type { CapturedContent } from '../content-text.ts';
import { isRetryableStatus, OtlpExporterSet, OtlpHttpExporter, type DropReason, type OtlpExporterHooks } from './exporter.ts';
import { encodeUsageEventSpan, EXPORTED_FIELDS, traceIdFor } from './span.ts';
import { decodeSpan, type OtlpSpan } from '../../../test/harness/otlp-proto.ts';

const usageEventToSpan = (...args: Parameters<typeof encodeUsageEventSpan>): OtlpSpan => decodeSpan(encodeUsageEventSpan(...args));

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
    assert.equal(attr(span, 'tollgate.applied_guardrails'), undefined, 'an empty list carries nothing');
    assert.equal(attr(span, 'tollgate.gateway_embedding_calls'), undefined, 'no embedding calls carries nothing');
    assert.equal(attr(span, 'tollgate.cached_tokens'), undefined, 'null is left out');
    assert.deepEqual(attr(span, 'tollgate.guardrail_blocked'), { boolValue: false }, 'false is a value');
    assert.equal(attr(span, 'error.type'), undefined);
    assert.equal(attr(span, 'tollgate.error_class'), undefined, 'error_class travels as error.type');
    assert.equal(attr(span, 'tollgate.prompt_tokens'), undefined, 'prompt_tokens travels as gen_ai.usage.input_tokens');
    assert.equal(attr(span, 'tollgate.completion_tokens'), undefined, 'completion_tokens travels as gen_ai.usage.output_tokens');
    assert.deepEqual(span.status, { code: 0 });
    assert.equal(span.traceId, '0f8fad5bd9cb469fa16570867728950e');
    assert.match(span.spanId, /^[0-9a-f]{16}$/);
  });

  test('every field marked for export becomes its tollgate.<field> attribute when it holds a value', () => {
    const full = event({
      status: 500, status_code: 500, error_class: 'upstream_error', error_message: 'boom', cached_tokens: 1, cache_creation_tokens: 2,
      reasoning_tokens: 3, passthrough_route_name: 'route', client_identity: 'svc', downstream_latency_ms: 1.5, downstream_ttft_ms: 0.25,
      upstream_latency_ms: 1, upstream_ttft_ms: 0.5, applied_guardrails: [{ name: 'g', kind: 'regex', hook: 'pre' }], guardrail_blocked: true,
      guardrail_blocked_fail_closed: true, guardrail_bypassed_reason: 'header', guardrail_enforced_hits: [{ guardrail_name: 'g', hook: 'pre', action: 'block' }],
      guardrail_monitor_hits: [{ guardrail_name: 'g', hook: 'post', action: 'flag' }],
      gateway_embedding_calls: { calls: [{ purpose: 'p', model: 'e', status: 200, prompt_tokens: 1, usage_reported: true }], dropped: 0 },
    });
    const span = usageEventToSpan(full);
    const exported = (Object.keys(EXPORTED_FIELDS) as (keyof UsageEvent)[]).filter((f) => EXPORTED_FIELDS[f]);
    assert.ok(exported.length > 25);
    for (const f of exported) {
      const v = full[f];
      const expected = typeof v === 'string' ? { stringValue: v }
        : typeof v === 'boolean' ? { boolValue: v }
        : typeof v === 'number' ? (Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v })
        : { stringValue: JSON.stringify(v) };
      assert.deepEqual(attr(span, `tollgate.${f}`), expected, f);
    }
  });

  test('a failure sets error.type and an error status; captured headers become http.request.header.<name>', () => {
    const span = usageEventToSpan(event({ status: 502, status_code: 502, error_class: 'transport', error_message: 'upstream connection broke', request_headers: { 'x-team': 'blue' } }));
    assert.deepEqual(attr(span, 'error.type'), { stringValue: 'transport' });
    assert.deepEqual(span.status, { code: 2, message: 'upstream connection broke' });
    assert.deepEqual(attr(span, 'http.request.header.x-team'), { arrayValue: { values: [{ stringValue: 'blue' }] } });
  });

  test('lists and maps with content travel as their JSON text', () => {
    const hits = [{ guardrail_id: 'g-1', action: 'monitor' }];
    const calls = { calls: [{ model: 'e', tokens: 3 }], dropped: 0 };
    const span = usageEventToSpan(event({ guardrail_monitor_hits: hits, gateway_embedding_calls: calls } as unknown as Partial<UsageEvent>));
    assert.deepEqual(attr(span, 'tollgate.guardrail_monitor_hits'), { stringValue: JSON.stringify(hits) });
    assert.deepEqual(attr(span, 'tollgate.gateway_embedding_calls'), { stringValue: JSON.stringify(calls) });
  });

  test('quotes, control characters, non-ASCII text and long values come back as they were; a lone surrogate as U+FFFD', () => {
    // Protobuf strings are UTF-8, which has no code for half a surrogate pair: it becomes U+FFFD.
    const odd: Array<[string, string]> = [
      ['say "hi"', 'say "hi"'],
      ['back\\slash', 'back\\slash'],
      ['tab\tnew\nline\u0001', 'tab\tnew\nline\u0001'],
      ['caf\u00e9 \u65e5\u672c', 'caf\u00e9 \u65e5\u672c'],
      ['emoji \ud83d\ude00', 'emoji \ud83d\ude00'],
      ['lone \ud800 half', 'lone \ufffd half'],
      ['del\u007f', 'del\u007f'],
      // Lengths of 128 bytes and more take a longer varint in every enclosing message.
      ['m'.repeat(200), 'm'.repeat(200)],
      ['\u00e9'.repeat(70_000), '\u00e9'.repeat(70_000)],
    ];
    for (const [v, back] of odd) {
      const span = usageEventToSpan(event({ requested_model: v, error_message: v, status: 500, request_headers: { 'x-team': v } }));
      assert.deepEqual(attr(span, 'gen_ai.request.model'), { stringValue: back });
      assert.equal(span.name, `chat ${back}`);
      assert.deepEqual(span.status, { code: 2, message: back });
      assert.deepEqual(attr(span, 'http.request.header.x-team'), { arrayValue: { values: [{ stringValue: back }] } });
    }
  });

  test('a captured header with a long name still becomes its http.request.header.<name> attribute', () => {
    const name = `x-${'h'.repeat(150)}`;
    const span = usageEventToSpan(event({ request_headers: { [name]: 'v', 'x-team': 'blue' } }));
    assert.deepEqual(attr(span, `http.request.header.${name}`), { arrayValue: { values: [{ stringValue: 'v' }] } });
    assert.deepEqual(attr(span, 'http.request.header.x-team'), { arrayValue: { values: [{ stringValue: 'blue' }] } });
  });

  test('a span larger than the encoder buffer is written whole, and the next span is written afresh', () => {
    const big = { request: 'x'.repeat(100_000), response: '\u65e5'.repeat(40_000), truncated: true };
    const large = usageEventToSpan(event(), big);
    assert.equal(attr(large, 'tollgate.content.request').stringValue, big.request);
    assert.equal(attr(large, 'tollgate.content.response').stringValue, big.response);
    const small = usageEventToSpan(event({ requested_model: 'after' }));
    assert.equal(attr(small, 'tollgate.content.request'), undefined);
    assert.deepEqual(attr(small, 'gen_ai.request.model'), { stringValue: 'after' });
  });

  test('an uppercase UUID request id gives the lowercase trace id', () => {
    assert.equal(traceIdFor('0F8FAD5B-D9CB-469F-A165-70867728950E'), '0f8fad5bd9cb469fa16570867728950e');
  });

  test("the span's trace id is traceIdFor's for every request id, UUID or not", () => {
    const ids = [
      '0f8fad5b-d9cb-469f-a165-70867728950e',
      '0F8FAD5B-D9CB-469F-A165-70867728950E',
      '0f8fAD5b-d9cb-469f-a165-70867728950E',
      '0f8fad5b-d9cb-469f-a165-70867728950g',
      '0f8fad5bd-9cb-469f-a165-70867728950e',
      '0f8fad5b-d9cb-469f-a165-70867728950e0',
      '0f8fad5b d9cb 469f a165 70867728950e',
      'caller-id-1',
      '',
    ];
    for (const id of ids) assert.equal(usageEventToSpan(event({ request_id: id })).traceId, traceIdFor(id), id);
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

  test('a batch POSTs one protobuf ExportTraceServiceRequest with the configured headers', async () => {
    const hooks = recorder();
    const ex = new OtlpHttpExporter({ name: 'rx', endpoint: rx.url, headers: { authorization: 'Bearer collector-token' }, sampleRate: 1 }, hooks, FAST, '1.2.3');
    ex.emit(event());
    ex.emit(event({ request_id: 'second' }));
    await rx.waitForRequests(1);
    await ex.close();
    assert.equal(rx.received.length, 1, 'both events in one batch');
    assert.equal(rx.received[0].headers['content-type'], 'application/x-protobuf');
    assert.equal(rx.received[0].headers.authorization, 'Bearer collector-token');
    assert.equal(rx.acceptedSpans().length, 2);
    const body = rx.received[0].body;
    assert.equal(body.resourceSpans.length, 1);
    assert.deepEqual(body.resourceSpans[0].resource, { attributes: [{ key: 'service.name', value: { stringValue: 'tollgate' } }] });
    assert.equal(body.resourceSpans[0].scopeSpans.length, 1);
    assert.deepEqual(body.resourceSpans[0].scopeSpans[0].scope, { name: 'tollgate.usage', version: '1.2.3', attributes: [] });
    assert.deepEqual(body.resourceSpans[0].scopeSpans[0].spans.map((sp: OtlpSpan) => attr(sp, 'tollgate.request_id').stringValue), ['0f8fad5b-d9cb-469f-a165-70867728950e', 'second']);
    assert.equal(hooks.exportedCount, 2);
  });

  test('delivered batches leave no queued bytes behind (the queue bound does not wear away)', async () => {
    const ex = new OtlpHttpExporter({ name: 'rx', endpoint: rx.url, headers: {}, sampleRate: 1 }, recorder(), FAST);
    for (let i = 0; i < 5; i++) {
      ex.emit(event({ request_id: `r${i}` }));
      assert.ok(ex.queuedBodyBytes > 0);
      await ex.kick();
    }
    await ex.close();
    assert.equal(rx.received.length, 5);
    assert.equal(ex.queued, 0);
    assert.equal(ex.queuedBodyBytes, 0);
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

  test('Retry-After is waited for in full, beyond the backoff cap', async () => {
    rx.script({ status: 503, headers: { 'retry-after': '1' } });
    const ex = new OtlpHttpExporter({ name: 'rx', endpoint: rx.url, headers: {}, sampleRate: 1 }, recorder(), FAST);
    ex.emit(event());
    void ex.kick();
    await rx.waitForRequests(1);
    const first = Date.now();
    await rx.waitForRequests(2);
    assert.ok(Date.now() - first >= 900, `retried after ${Date.now() - first} ms, not the 1 s asked for`);
    await ex.close();
  });

  test('Retry-After: 0 does not hurry a retry past the backoff', async () => {
    rx.script({ status: 429, headers: { 'retry-after': '0' } });
    const ex = new OtlpHttpExporter({ name: 'rx', endpoint: rx.url, headers: {}, sampleRate: 1 }, recorder(), { ...FAST, initialBackoffMs: 400, maxBackoffMs: 400 });
    ex.emit(event());
    void ex.kick();
    await rx.waitForRequests(1);
    const first = Date.now();
    await rx.waitForRequests(2);
    assert.ok(Date.now() - first >= 180, `retried after ${Date.now() - first} ms, inside the 200-400 ms backoff`);
    await ex.close();
  });

  test('a Retry-After beyond the retry budget drops the batch at once: retry_budget_exhausted', async () => {
    rx.script({ status: 503, headers: { 'retry-after': '120' } });
    const hooks = recorder();
    const ex = new OtlpHttpExporter({ name: 'rx', endpoint: rx.url, headers: {}, sampleRate: 1 }, hooks, { ...FAST, retryBudgetMs: 5_000 });
    ex.emit(event());
    await ex.kick();
    await ex.close();
    assert.equal(rx.received.length, 1);
    assert.deepEqual(hooks.drops, [['retry_budget_exhausted', 1]]);
  });

  test('headers no request can carry drop the batch as permanent_error, with no unhandled rejection', async () => {
    const hooks = recorder();
    const ex = new OtlpHttpExporter({ name: 'rx', endpoint: rx.url, headers: { authorization: 'Bearer tok-SECRET\n' }, sampleRate: 1 }, hooks, FAST);
    ex.emit(event());
    await ex.kick();
    await ex.close();
    assert.equal(rx.received.length, 0);
    assert.deepEqual(hooks.drops, [['permanent_error', 1]]);
    assert.equal(hooks.warnings.length, 1);
    assert.ok(!JSON.stringify(hooks.warnings).includes('tok-SECRET'), 'the header value is never logged');
  });

  test('a delivery that throws (a failing hook) drops its batch, counted, and the exporter goes on', async () => {
    const hooks = recorder();
    let failing = true;
    const ex = new OtlpHttpExporter({ name: 'rx', endpoint: rx.url, headers: {}, sampleRate: 1 }, {
      ...hooks,
      exported: (name, n) => {
        if (failing) throw new Error('hook failed');
        hooks.exported(name, n);
      },
    }, FAST);
    ex.emit(event());
    await ex.kick();
    assert.deepEqual(hooks.drops, [['permanent_error', 1]]);
    assert.deepEqual(hooks.warnings, ['otlp export failed: batch dropped']);
    failing = false;
    ex.emit(event());
    await ex.kick();
    await ex.close();
    assert.equal(hooks.exportedCount, 1, 'the next batch is delivered');
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

  test('full batches leave at once, back to back; a partial batch waits for the flush timer', async () => {
    const hooks = recorder();
    const ex = new OtlpHttpExporter({ name: 'rx', endpoint: rx.url, headers: {}, sampleRate: 1 }, hooks, { ...FAST, flushMs: 400, batchSize: 4 });
    const started = Date.now();
    for (let i = 0; i < 10; i++) ex.emit(event({ request_id: `r${i}` }));
    await rx.waitForRequests(2);
    // While the first export was in flight the queue grew past one batch: the loop went on with a
    // full batch, and stopped at the partial one instead of sending it as soon as it could.
    assert.deepEqual(rx.received.map((r) => r.body.resourceSpans[0].scopeSpans[0].spans.length), [4, 4]);
    assert.equal(ex.queued, 2);
    await rx.waitForRequests(3);
    assert.ok(Date.now() - started >= 300, `the partial batch went with the timer (${Date.now() - started} ms)`);
    assert.equal(rx.received[2].body.resourceSpans[0].scopeSpans[0].spans.length, 2);
    // A flush covers what was queued when the timer fired: events that arrive while it is in
    // flight wait for the next tick (or a full batch), as under steady load.
    ex.emit(event({ request_id: 'late-1' }));
    ex.emit(event({ request_id: 'late-2' }));
    await new Promise((r) => setTimeout(r, 150));
    assert.equal(rx.received.length, 3);
    assert.equal(ex.queued, 2);
    await ex.close();
    assert.equal(rx.received.length, 4);
    assert.equal(hooks.exportedCount, 12);
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

async function until(what: string, ms: number, check: () => boolean): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('closing', () => {
  test('a removed exporter whose collector never answers stops at once after its grace: the export is aborted, the queue dropped as exporter_closed, its connection closed', async () => {
    const collector = await startSilentCollector();
    try {
      const hooks = recorder();
      // The default request timeout (10 s) per batch: without the abort, three batches would take 30 s.
      const set = new OtlpExporterSet(hooks, { flushMs: 60_000, batchSize: 4 });
      set.update([{ name: 'silent', endpoint: collector.url, headers: {}, sampleRate: 1 }]);
      for (let i = 0; i < 10; i++) set.emit(event({ request_id: `r${i}` }));
      await until('the first export is in flight', 2000, () => collector.accepted() === 1);
      const removed = Date.now();
      set.update([]);
      const dropped = () => hooks.drops.reduce((n, [, c]) => n + c, 0);
      await until('every queued event is dropped', 4000, () => dropped() === 10);
      assert.ok(Date.now() - removed < 3500, `${Date.now() - removed} ms`);
      assert.deepEqual(new Set(hooks.drops.map(([reason]) => reason)), new Set(['exporter_closed']));
      await until('the connection to the collector is closed', 1000, () => collector.open() === 0);
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(collector.accepted(), 1, 'no export is tried after the abort');
    } finally {
      await collector.close();
    }
  });

  test('closing the set waits for an exporter an update removed: its export in flight is accounted for, its connection closed', async () => {
    const collector = await startSilentCollector();
    try {
      const hooks = recorder();
      const set = new OtlpExporterSet(hooks, { flushMs: 60_000, batchSize: 3 });
      set.update([{ name: 'silent', endpoint: collector.url, headers: {}, sampleRate: 1 }]);
      for (let i = 0; i < 3; i++) set.emit(event({ request_id: `r${i}` }));
      await until('the export is in flight', 2000, () => collector.accepted() === 1);
      set.update([]);
      // Shutdown right after the reload: the removed exporter is still in its grace.
      await set.close();
      assert.deepEqual(hooks.drops, [['exporter_closed', 3]]);
      await until('the connection to the collector is closed', 1000, () => collector.open() === 0);
    } finally {
      await collector.close();
    }
  });

  test('an event emitted after close is counted as exporter_closed, not lost silently; a sampled-out one is not counted', async () => {
    const collector = await startSilentCollector();
    try {
      const hooks = recorder();
      const ex = new OtlpHttpExporter({ name: 'gone', endpoint: collector.url, headers: {}, sampleRate: 1 }, hooks, FAST);
      await ex.close(10);
      ex.emit(event({ request_id: 'late-1' }));
      ex.emit(event({ request_id: 'late-2' }));
      assert.deepEqual(hooks.drops, [['exporter_closed', 1], ['exporter_closed', 1]]);
      assert.equal(ex.queued, 0);
      const none = new OtlpHttpExporter({ name: 'none', endpoint: collector.url, headers: {}, sampleRate: 0 }, hooks, FAST);
      await none.close(10);
      none.emit(event({ request_id: 'late-3' }));
      assert.equal(hooks.drops.length, 2, 'an event sampling would not have exported is not a drop');
      assert.equal(collector.accepted(), 0);
    } finally {
      await collector.close();
    }
  });

  test('a closed exporter leaves no kept-alive connection to its collector', async () => {
    const sockets = new Set<net.Socket>();
    const server = http.createServer((req, res) => {
      req.resume();
      req.once('end', () => res.end());
    });
    server.on('connection', (s) => {
      sockets.add(s);
      s.once('close', () => sockets.delete(s));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const hooks = recorder();
      const { port } = server.address() as net.AddressInfo;
      const ex = new OtlpHttpExporter({ name: 'rx', endpoint: `http://127.0.0.1:${port}/v1/traces`, headers: {}, sampleRate: 1 }, hooks, FAST);
      ex.emit(event());
      await ex.kick();
      assert.equal(hooks.exportedCount, 1);
      assert.equal(sockets.size, 1, 'the connection is kept alive between exports');
      await ex.close();
      await until('the kept-alive connection is closed', 1000, () => sockets.size === 0);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('content_mode: full', () => {
  let full: OtlpReceiver;
  let meta: OtlpReceiver;
  before(async () => {
    full = await startOtlpReceiver();
    meta = await startOtlpReceiver();
  });
  after(async () => {
    await Promise.all([full.close(), meta.close()]);
  });
  beforeEach(() => {
    full.reset();
    meta.reset();
  });

  /** A capture record stand-in counting how often its strings are built. */
  function capture(content: CapturedContent): ContentCapture & { calls: number } {
    const c = { calls: 0, content: () => (c.calls++, content) };
    return c as unknown as ContentCapture & { calls: number };
  }
  const CONTENT_KEYS = ['tollgate.content.request', 'tollgate.content.response', 'tollgate.content.truncated'];

  test('a span gets the content attributes only when content is given', () => {
    const with_ = usageEventToSpan(event(), { request: '{"q":1}', response: 'answer', truncated: false });
    assert.deepEqual(attr(with_, 'tollgate.content.request'), { stringValue: '{"q":1}' });
    assert.deepEqual(attr(with_, 'tollgate.content.response'), { stringValue: 'answer' });
    assert.deepEqual(attr(with_, 'tollgate.content.truncated'), { boolValue: false });
    const without = usageEventToSpan(event());
    for (const k of CONTENT_KEYS) assert.equal(attr(without, k), undefined, k);
  });

  test('contentCapture is the largest full-mode cap, 0 without one, and follows updates', () => {
    const set = new OtlpExporterSet(recorder(), FAST);
    assert.equal(set.contentCapture(), 0);
    set.update([{ name: 'm', endpoint: meta.url, headers: {}, sampleRate: 1 }, { name: 'z', endpoint: meta.url, headers: {}, sampleRate: 1, contentMaxBytes: 0 }]);
    assert.equal(set.contentCapture(), 0, 'metadata_only exporters want nothing');
    set.update([{ name: 'm', endpoint: meta.url, headers: {}, sampleRate: 1 }, { name: 'a', endpoint: full.url, headers: {}, sampleRate: 1, contentMaxBytes: 100 }, { name: 'b', endpoint: full.url, headers: {}, sampleRate: 1, contentMaxBytes: 4096 }]);
    assert.equal(set.contentCapture(), 4096);
    set.update([{ name: 'm', endpoint: meta.url, headers: {}, sampleRate: 1 }]);
    assert.equal(set.contentCapture(), 0, 'removing the full exporters turns capture off');
    void set.close();
  });

  test('a full exporter gets the content trimmed to its own cap; a metadata_only one gets none', async () => {
    const set = new OtlpExporterSet(recorder(), FAST);
    set.update([
      { name: 'full', endpoint: full.url, headers: {}, sampleRate: 1, contentMaxBytes: 8 },
      { name: 'meta', endpoint: meta.url, headers: {}, sampleRate: 1 },
    ]);
    const c = capture({ request: '{"prompt":"héllo"}', response: 'wörld', truncated: false });
    set.emit(event(), { headers: {}, content: c });
    await Promise.all([full.waitForRequests(1), meta.waitForRequests(1)]);
    await set.close();
    const [f] = full.acceptedSpans();
    assert.deepEqual(attr(f, 'tollgate.content.request'), { stringValue: '{"prompt' });
    assert.deepEqual(attr(f, 'tollgate.content.response'), { stringValue: 'wörld' });
    assert.deepEqual(attr(f, 'tollgate.content.truncated'), { boolValue: true });
    const [m] = meta.acceptedSpans();
    for (const k of CONTENT_KEYS) assert.equal(attr(m, k), undefined, k);
    assert.ok(!JSON.stringify(meta.received[0].body).includes('héllo'));
    assert.equal(c.calls, 1, 'the strings are built once');
  });

  test('without a full exporter the capture is never read', () => {
    const set = new OtlpExporterSet(recorder(), FAST);
    set.update([{ name: 'meta', endpoint: meta.url, headers: {}, sampleRate: 1 }]);
    const c = capture({ request: 'q', response: 'a', truncated: false });
    set.emit(event(), { headers: {}, content: c });
    assert.equal(c.calls, 0);
    void set.close();
  });

  test('a full exporter sent no content (a failed-attempt row) exports the span without content attributes', async () => {
    const ex = new OtlpHttpExporter({ name: 'full', endpoint: full.url, headers: {}, sampleRate: 1, contentMaxBytes: 100 }, recorder(), FAST);
    ex.emit(event());
    await full.waitForRequests(1);
    await ex.close();
    for (const k of CONTENT_KEYS) assert.equal(attr(full.acceptedSpans()[0], k), undefined, k);
  });

  test('multi-byte text survives encoding, across the batch buffer growing', async () => {
    const text = 'é🙂中'.repeat(9000); // ~81 KB of UTF-8 per side: the 64 KiB first buffer must grow
    const c = { request: text, response: text, truncated: false };
    const ex = new OtlpHttpExporter({ name: 'full', endpoint: full.url, headers: {}, sampleRate: 1, contentMaxBytes: 1_000_000 }, recorder(), { ...FAST, flushMs: 60_000 });
    for (let i = 0; i < 3; i++) ex.emit(event({ request_id: `mb${i}` }), c);
    await ex.close();
    const spans = full.acceptedSpans();
    assert.equal(spans.length, 3);
    for (const s of spans) {
      assert.equal(attr(s, 'tollgate.content.request').stringValue, text);
      assert.equal(attr(s, 'tollgate.content.response').stringValue, text);
    }
  });

  test('a delivered batch\'s buffer is filled again: a shorter batch after a longer one carries only its own spans', async () => {
    const long = { request: 'L'.repeat(20_000), response: 'l'.repeat(20_000), truncated: false };
    const short = { request: 's', response: 's', truncated: true };
    const ex = new OtlpHttpExporter({ name: 'full', endpoint: full.url, headers: {}, sampleRate: 1, contentMaxBytes: 100_000 }, recorder(), { ...FAST, batchSize: 2, flushMs: 60_000 });
    ex.emit(event({ request_id: 'long-0' }), long);
    ex.emit(event({ request_id: 'long-1' }), long);
    await full.waitForRequests(1);
    await ex.kick(); // the first delivery has settled: its buffer is a spare now
    ex.emit(event({ request_id: 'short-0' }), short);
    ex.emit(event({ request_id: 'short-1' }), short);
    await full.waitForRequests(2);
    await ex.close();
    const [first, second] = full.received.map((r) => r.body.resourceSpans[0].scopeSpans[0].spans as OtlpSpan[]);
    assert.deepEqual(first.map((s) => attr(s, 'tollgate.request_id').stringValue), ['long-0', 'long-1']);
    assert.deepEqual(second.map((s) => attr(s, 'tollgate.request_id').stringValue), ['short-0', 'short-1']);
    assert.deepEqual(second.map((s) => attr(s, 'tollgate.content.request').stringValue), ['s', 's']);
  });

  test('queued bytes are bounded (queue_full) and batches are cut by size', async () => {
    const c = { request: 'x'.repeat(400), response: 'y'.repeat(400), truncated: false };
    const spanBytes = encodeUsageEventSpan(event({ request_id: 'r0' }), c).length;
    const hooks = recorder();
    const bounded = new OtlpHttpExporter({ name: 'full', endpoint: full.url, headers: {}, sampleRate: 1, contentMaxBytes: 1000 }, hooks, { ...FAST, flushMs: 60_000, maxQueuedBytes: Math.floor(3.5 * spanBytes) });
    for (let i = 0; i < 4; i++) bounded.emit(event({ request_id: `r${i}` }), c);
    assert.deepEqual(hooks.drops, [['queue_full', 1]], 'a fourth span would pass the bound');
    assert.equal(bounded.queued, 3);
    await bounded.close();
    assert.equal(full.acceptedSpans().length, 3);
    full.reset();

    // A batch of at most 1.5 spans' size: each span goes alone, the full ones at once, the last at close.
    const cut = new OtlpHttpExporter({ name: 'full', endpoint: full.url, headers: {}, sampleRate: 1, contentMaxBytes: 1000 }, recorder(), { ...FAST, flushMs: 60_000, maxBatchBytes: Math.floor(1.5 * spanBytes) });
    for (let i = 0; i < 3; i++) cut.emit(event({ request_id: `r${i}` }), c);
    await full.waitForRequests(2);
    assert.equal(cut.queued, 1, 'the last span waits: alone it is not a full batch');
    await cut.close();
    assert.deepEqual(full.received.map((r) => r.body.resourceSpans[0].scopeSpans[0].spans.length), [1, 1, 1]);
    assert.deepEqual(full.acceptedSpans().map((s) => attr(s, 'tollgate.content.request').stringValue.length), [400, 400, 400]);
  });
});
