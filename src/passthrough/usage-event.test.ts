import { test } from 'node:test';
import assert from 'node:assert/strict';
import { passthroughUsageEvent } from './usage-event.ts';

test('every field of the usage event is filled; model_id is empty', () => {
  const e = passthroughUsageEvent({
    requestId: 'rid', routeName: 'openai-files', requestedModel: 'gpt-4o', provider: 'openai', providerKeyId: 'pk1', apiKeyId: 'k1',
    status: 200, errorClass: null, errorMessage: null, dispatched: true, stream: true,
    tokens: { prompt: 9, completion: 4, total: 13, cached: 2, cacheCreation: 1, reasoning: 3 },
    latencyMs: 12.34567, clientIdentity: 'employee-42',
    upstreamSentMs: 1.5, upstreamFirstByteMs: 3.21, upstreamEndMs: 11.0004, downstreamFirstByteMs: 3.3
  }, '2026-01-02T03:04:05.678Z');
  assert.deepEqual(e, {
    type: 'usage', occurred_at: '2026-01-02T03:04:05.678Z', request_id: 'rid', operation: 'passthrough', requested_model: 'gpt-4o',
    model_id: '', provider: 'openai', provider_key_id: 'pk1', api_key_id: 'k1', status: 200, status_code: 200,
    error_class: null, error_message: null, attempt_kind: 'initial', billable: true, stream: true,
    prompt_tokens: 9, completion_tokens: 4, total_tokens: 13, cached_tokens: 2, cache_creation_tokens: 1, reasoning_tokens: 3,
    latency_ms: 12.346, ttft_ms: 3.21, passthrough_route_name: 'openai-files', client_identity: 'employee-42', upstream_model: 'gpt-4o',
    downstream_ttft_ms: 3.3, upstream_latency_ms: 9.5, upstream_ttft_ms: 1.71,
  });
});

test('no usage: null counts; a total of 0 is stored as null; refusals are not billable', () => {
  const e = passthroughUsageEvent({
    requestId: 'rid', routeName: 'r', requestedModel: '', provider: null, providerKeyId: null, apiKeyId: null,
    status: 401, errorClass: 'missing_api_key', errorMessage: 'Missing API key in request', dispatched: false, stream: false,
    tokens: { total: 0 }, latencyMs: 1, clientIdentity: null,
    upstreamSentMs: undefined, upstreamFirstByteMs: undefined, upstreamEndMs: undefined, downstreamFirstByteMs: undefined,
  }, new Date(0).toISOString());
  assert.equal(e.prompt_tokens, null);
  assert.equal(e.upstream_model, null, 'no model in the body: none named upstream');
  assert.equal(e.total_tokens, null);
  assert.equal(e.ttft_ms, null);
  assert.equal(e.downstream_ttft_ms, null);
  assert.equal(e.upstream_latency_ms, null);
  assert.equal(e.upstream_ttft_ms, null);
  assert.equal(e.billable, false);
  assert.equal(e.status_code, 401);
});

test('only a 2xx the upstream answered is billable: not an upstream error, not a caller that left', () => {
  const base = {
    requestId: 'rid', routeName: 'r', requestedModel: '', provider: null, providerKeyId: null, apiKeyId: 'k1',
    errorClass: null, errorMessage: null, dispatched: true, stream: false, tokens: undefined, latencyMs: 1, clientIdentity: null,
    upstreamSentMs: undefined, upstreamFirstByteMs: undefined, upstreamEndMs: undefined, downstreamFirstByteMs: undefined,
  };
  const at = new Date().toISOString();
  assert.equal(passthroughUsageEvent({ ...base, status: 201 }, at).billable, true);
  assert.equal(passthroughUsageEvent({ ...base, status: 500, errorClass: 'upstream_status', errorMessage: 'upstream returned 500' }, at).billable, false);
  assert.equal(passthroughUsageEvent({ ...base, status: 499, errorClass: 'client_disconnected', errorMessage: 'client disconnected' }, at).billable, false);
});
