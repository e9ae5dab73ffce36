// E2E: proxy.max_in_flight_requests (docs/configuration.md). While the proxy listener serves its
// cap, a new request is refused at once with 503 `overloaded` and `Retry-After: 1`, in the
// caller's envelope, logged and given its usage row; health probes are never shed; once requests finish, new ones
// are served again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { useProxyFixture } from '../harness/proxy-fixture.ts';
import { chatCompletion, type MockUpstream } from '../harness/mock-upstream.ts';
import { waitForLines } from '../harness/log-lines.ts';
import type { Gateway } from '../harness/spawn.ts';

const KEY = 'sk-e2e-shedding-caller';
let mock: MockUpstream;
let gw: Gateway;
let client: OpenAI;

useProxyFixture({
  config: { proxy: { max_in_flight_requests: 2 }, upstream: { retries: 0 } },
  resources: (mockUrl) => ({
    _format_version: '1',
    provider_keys: [{ display_name: 'up', provider: 'openai', api_key: 'sk-upstream-secret', api_base: `${mockUrl}/v1` }],
    models: [{ display_name: 'fast', provider: 'openai', model_name: 'gpt-4o-mini', provider_key: 'up' }],
    api_keys: [{ display_name: 'caller', key_env: 'E2E_SHEDDING_KEY', allowed_models: ['*'] }],
  }),
  env: { E2E_SHEDDING_KEY: KEY },
  callerKey: KEY,
  ready: (fx) => ({ mock, gw, client } = fx),
});

const ask = () => client.chat.completions.create({ model: 'fast', messages: [{ role: 'user', content: 'hi' }] });

test('past the in-flight cap a request is shed with 503 overloaded; probes still answer; capacity comes back', async () => {
  // Two requests the upstream holds for a while fill the cap.
  let release: () => void = () => {};
  const held = new Promise<void>((r) => (release = r));
  mock.setFallback(async () => {
    await held;
    return { json: chatCompletion({ model: 'gpt-4o-mini' }) };
  });
  const slow = [ask(), ask()];
  await mock.waitForRequests(2);

  const res = await fetch(`${gw.proxyUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'fast', messages: [{ role: 'user', content: 'hi' }] }),
    // Without shedding the request would wait behind the held ones.
    signal: AbortSignal.timeout(5000),
  });
  assert.equal(res.status, 503);
  assert.equal(res.headers.get('retry-after'), '1');
  const requestId = res.headers.get('x-tollgate-request-id');
  assert.ok(requestId);
  const body = (await res.json()) as { error: { type: string; code: string; message: string } };
  assert.equal(body.error.code, 'overloaded');
  assert.equal(body.error.type, 'api_error');
  assert.match(body.error.message, /limit of 2 requests at once/);
  assert.equal(mock.requests.length, 2, 'a shed request never reaches the upstream');

  // The SDKs see it as the retryable error it is; the Anthropic envelope on /v1/messages.
  await assert.rejects(ask(), (e: unknown) => e instanceof OpenAI.APIError && e.status === 503 && e.code === 'overloaded');
  const anthropic = new Anthropic({ apiKey: KEY, baseURL: gw.proxyUrl, maxRetries: 0 });
  await assert.rejects(
    anthropic.messages.create({ model: 'fast', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }),
    // reference/ai-gateway.md §5.3: a 503 is `overloaded_error` in the Messages envelope.
    (e: unknown) => e instanceof Anthropic.APIError && e.status === 503 && (e.error as { type: string }).type === 'error'
      && (e.error as { error: { type: string } }).error.type === 'overloaded_error',
  );

  for (const probe of ['/livez', '/readyz']) {
    const p = await fetch(`${gw.proxyUrl}${probe}`);
    assert.equal(p.status, 200, `${probe} is never shed`);
  }

  const [line] = await waitForLines(gw, 'access', (l) => l.request_id === requestId);
  assert.ok(line, 'the shed request has an access line');
  assert.equal(line.status, 503);
  assert.equal(line.error_kind, 'overloaded');
  assert.equal(line.path, '/v1/chat/completions');
  // A model-serving request: refused before its body was read, it still leaves a usage row.
  const [usage] = await waitForLines(gw, 'usage', (l) => l.request_id === requestId);
  assert.ok(usage, 'the shed request has a usage row');
  assert.deepEqual(
    [usage.operation, usage.status, usage.error_class, usage.error_message, usage.requested_model, usage.billable],
    ['chat', 503, 'overloaded', line.error, '', false],
  );

  release();
  for (const r of await Promise.all(slow)) assert.equal(r.object, 'chat.completion');
  const after = await ask();
  assert.equal(after.model, 'fast', 'capacity comes back once requests finish');
});
