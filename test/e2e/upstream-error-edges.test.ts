// E2E: upstream answers that look like success but are not, and the retry hints of upstream
// errors (docs/errors.md "Upstream errors"): an error envelope under 200, a completion without
// choices, `x-should-retry` on an upstream error, and an Anthropic overload on the native path.
// Each through the official SDKs, native and translated, plain and streamed, with the usage row
// and a model group's failover.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import type { Gateway } from '../harness/spawn.ts';
import { useProxyFixture } from '../harness/proxy-fixture.ts';
import type { MockUpstream, RecordedRequest, Reply } from '../harness/mock-upstream.ts';
import { anthropicJson, familyOf, openAIJson, type Turn } from '../harness/provider-wire.ts';
import { usageOf } from '../harness/echo-upstream.ts';
import { twoFamilyProviderKeys } from '../harness/two-families.ts';

const CALLER_KEY = 'sk-e2e-edges-caller-41c7';
const UPSTREAM_KEY = 'sk-upstream-edges-secret-9f3b2a';

let mock: MockUpstream;
let gw: Gateway;

const oa = (name: string, upstream: string, extra: object = {}) => ({ display_name: name, provider: 'openai', model_name: upstream, provider_key: 'oa', ...extra });
const an = (name: string, upstream: string, extra: object = {}) => ({ display_name: name, provider: 'anthropic', model_name: upstream, provider_key: 'an', ...extra });

useProxyFixture({
  config: { upstream: { retries: 0 } },
  resources: (mockUrl) => ({
    _format_version: '1',
    provider_keys: twoFamilyProviderKeys(mockUrl, UPSTREAM_KEY),
    models: [
      oa('m-openai', 'gpt-up'),
      an('m-anthropic', 'claude-up'),
      oa('m-retry', 'retry-up', { retries: 2 }),
      an('m-anthropic-retry', 'claude-retry-up', { retries: 2 }),
      oa('fo-a', 'fo-up-a'),
      oa('fo-b', 'fo-up-b'),
      an('fo-an-a', 'fo-an-up-a'),
      { display_name: 'g-fo', routing: { targets: [{ model: 'fo-a' }, { model: 'fo-b' }] } },
      { display_name: 'g-fo-an', routing: { targets: [{ model: 'fo-an-a' }, { model: 'fo-b' }] } },
      oa('rt-a', 'rt-up-a', { retries: 2 }),
      oa('rt-b', 'rt-up-b'),
      { display_name: 'g-rt', routing: { targets: [{ model: 'rt-a' }, { model: 'rt-b' }] } },
    ],
    api_keys: [{ display_name: 'caller', key_env: 'E2E_EDGES_KEY', allowed_models: ['*'] }],
  }),
  env: { E2E_EDGES_KEY: CALLER_KEY },
  ready: (fx) => ({ mock, gw } = fx),
});

const openai = (maxRetries = 0) => new OpenAI({ apiKey: CALLER_KEY, baseURL: `${gw.proxyUrl}/v1`, maxRetries });
const anthropic = (maxRetries = 0) => new Anthropic({ apiKey: CALLER_KEY, baseURL: gw.proxyUrl, maxRetries });

const TEXT: Turn = { text: 'served', usage: { input: 10, output: 3 } };
const OPENAI_QUOTA = { error: { message: `You exceeded your current quota (key ${UPSTREAM_KEY})`, type: 'insufficient_quota', param: null, code: 'insufficient_quota' } };
const ANTHROPIC_OVERLOAD = { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } };

const upstreamModel = (req: RecordedRequest): string => (typeof req.json?.model === 'string' ? req.json.model : '');

/** A good answer in the upstream's own wire format. */
function ok(req: RecordedRequest): Reply {
  return { json: familyOf(req) === 'anthropic' ? anthropicJson(TEXT, upstreamModel(req)) : openAIJson(TEXT, upstreamModel(req)) };
}

/**
 * The OpenAI SDK's error for OPENAI_QUOTA relayed as an upstream error: 502 with the upstream's
 * type, code and message (key masked), recorded upstream_in_band.
 */
async function assertQuotaError(err: any): Promise<void> {
  assert.ok(err instanceof OpenAI.APIError, String(err));
  assert.equal(err.status, 502);
  assert.equal(err.type, 'insufficient_quota');
  assert.equal(err.code, 'insufficient_quota');
  assert.match(err.message, /You exceeded your current quota \(key \[REDACTED\]\)/);
  assert.doesNotMatch(JSON.stringify(err.error), new RegExp(UPSTREAM_KEY));
  const row = await usageOf(gw, err.headers?.get('x-tollgate-request-id') ?? null);
  assert.equal(row.status, 502);
  assert.equal(row.error_class, 'upstream_in_band');
}

async function callerError(p: Promise<unknown>): Promise<any> {
  try {
    const v: any = await p;
    // A stream that opened: read it to its end (an error frame throws).
    if (v !== null && typeof v === 'object' && Symbol.asyncIterator in v) for await (const _ of v);
  } catch (e) {
    return e;
  }
  assert.fail('the call succeeded');
}

const openAICall = (model: string, stream: boolean, client = openai()) =>
  client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], stream } as any);
const anthropicCall = (model: string, stream: boolean, client = anthropic()) =>
  client.messages.create({ model, max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], stream } as any);

describe('an error envelope under 200 is an upstream error', () => {
  for (const stream of [false, true]) {
    it(`openai SDK, native (stream ${stream}): 502 with the upstream's message (key masked), type and code; usage upstream_in_band`, async () => {
      mock.setFallback({ json: OPENAI_QUOTA });
      const err = await callerError(openAICall('m-openai', stream));
      await assertQuotaError(err);
    });

    it(`anthropic SDK, translated to an OpenAI upstream (stream ${stream}): 502 api_error with the upstream's message`, async () => {
      mock.setFallback({ json: OPENAI_QUOTA });
      const err = await callerError(anthropicCall('m-openai', stream));
      assert.ok(err instanceof Anthropic.APIError, String(err));
      assert.equal(err.status, 502);
      assert.equal(err.type, 'api_error');
      assert.match(err.apiMessage ?? '', /You exceeded your current quota \(key \[REDACTED\]\)/);
    });

    it(`anthropic SDK, native (stream ${stream}): 502 keeping Anthropic's overloaded_error and message`, async () => {
      mock.setFallback({ json: ANTHROPIC_OVERLOAD });
      const err = await callerError(anthropicCall('m-anthropic', stream));
      assert.ok(err instanceof Anthropic.APIError, String(err));
      assert.equal(err.status, 502);
      assert.equal(err.type, 'overloaded_error');
      assert.equal(err.apiMessage, 'Overloaded');
      const row = await usageOf(gw, err.headers?.get('x-tollgate-request-id') ?? null);
      assert.equal(row.status, 502);
      assert.equal(row.error_class, 'upstream_in_band');
    });

    it(`openai SDK, translated to an Anthropic upstream (stream ${stream}): 502 with Anthropic's message and type`, async () => {
      mock.setFallback({ json: ANTHROPIC_OVERLOAD });
      const err = await callerError(openAICall('m-anthropic', stream));
      assert.ok(err instanceof OpenAI.APIError, String(err));
      assert.equal(err.status, 502);
      assert.equal(err.type, 'overloaded_error');
      assert.match(err.message, /Overloaded/);
    });
  }

  it('a model group fails over to its next target', async () => {
    mock.setFallback((req) => (upstreamModel(req).endsWith('-a') ? { json: upstreamModel(req).startsWith('fo-an') ? ANTHROPIC_OVERLOAD : OPENAI_QUOTA } : ok(req)));
    const { data, response } = await openai().chat.completions.create({ model: 'g-fo', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    assert.equal(data.choices[0].message.content, 'served');
    assert.equal(response.headers.get('x-tollgate-served-by'), 'fo-b');
    const msg = await anthropic().messages.create({ model: 'g-fo-an', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal((msg.content[0] as any).text, 'served');
    assert.deepEqual(mock.requests.map(upstreamModel), ['fo-up-a', 'fo-up-b', 'fo-an-up-a', 'fo-up-b']);
  });
});

describe('a stream answered with a bare JSON error document under text/event-stream is an upstream error', () => {
  /** The error document as the whole body of an event stream: no `data:` line. */
  const bareError = (doc: object, chunked = false): Reply => {
    const text = JSON.stringify(doc);
    const headers = { 'content-type': 'text/event-stream' };
    return chunked ? { headers, chunks: [text.slice(0, 7), text.slice(7)], chunkDelayMs: 20 } : { headers, body: text };
  };

  for (const chunked of [false, true]) {
    it(`openai SDK, native, stream: 502 with the upstream's message (key masked), type and code; usage upstream_in_band${chunked ? ' (body split across chunks)' : ''}`, async () => {
      mock.setFallback(bareError(OPENAI_QUOTA, chunked));
      const err = await callerError(openAICall('m-openai', true));
      await assertQuotaError(err);
    });
  }

  it('anthropic SDK, native, stream: 502 keeping Anthropic\'s overloaded_error and message', async () => {
    mock.setFallback(bareError(ANTHROPIC_OVERLOAD));
    const err = await callerError(anthropicCall('m-anthropic', true));
    assert.ok(err instanceof Anthropic.APIError, String(err));
    assert.equal(err.status, 502);
    assert.equal(err.type, 'overloaded_error');
    assert.equal(err.apiMessage, 'Overloaded');
  });

  it('a whole completion mislabelled the same way is answered as a stream, as a JSON answer to a stream request is', async () => {
    mock.setFallback((req) => ({ headers: { 'content-type': 'text/event-stream' }, body: JSON.stringify(openAIJson(TEXT, upstreamModel(req))) }));
    const stream = await openai().chat.completions.create({ model: 'm-openai', messages: [{ role: 'user', content: 'hi' }], stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    assert.equal(text, 'served');
  });

  it('a model group fails over to its next target (stream)', async () => {
    mock.setFallback((req) => (upstreamModel(req).endsWith('-a') ? bareError(OPENAI_QUOTA) : ok(req)));
    const stream = await openai().chat.completions.create({ model: 'g-fo', messages: [{ role: 'user', content: 'hi' }], stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    assert.equal(text, 'served');
    assert.deepEqual(mock.requests.map(upstreamModel), ['fo-up-a', 'fo-up-b']);
  });
});

describe('a completion without choices is no answer', () => {
  const EMPTY = (req: RecordedRequest): Reply => ({ json: { ...openAIJson(TEXT, upstreamModel(req)), choices: [] } });
  for (const stream of [false, true]) {
    it(`openai SDK, native (stream ${stream}): 502 upstream_decode`, async () => {
      mock.setFallback(EMPTY);
      const err = await callerError(openAICall('m-openai', stream));
      assert.ok(err instanceof OpenAI.APIError, String(err));
      assert.equal(err.status, 502);
      assert.equal(err.code, 'upstream_decode');
      const row = await usageOf(gw, err.headers?.get('x-tollgate-request-id') ?? null);
      assert.equal(row.error_class, 'upstream_decode');
    });

    it(`anthropic SDK, translated (stream ${stream}): 502, not an empty end_turn message`, async () => {
      mock.setFallback(EMPTY);
      const err = await callerError(anthropicCall('m-openai', stream));
      assert.ok(err instanceof Anthropic.APIError, String(err));
      assert.equal(err.status, 502);
    });
  }

  it('an event stream of choice-less chunks ending with [DONE] ends with an error frame, not a clean empty answer', async () => {
    const chunk = { id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-up', choices: [] };
    mock.setFallback({ sse: [chunk, chunk] });
    const { data: stream, response } = await openai().chat.completions.create({ model: 'm-openai', messages: [{ role: 'user', content: 'hi' }], stream: true }).withResponse();
    // The head went out with the first upstream bytes: the failure comes in the stream.
    const err = await callerError(Promise.resolve(stream));
    assert.ok(err instanceof OpenAI.APIError, String(err));
    assert.match(err.message, /ended before the response was complete/);
    const row = await usageOf(gw, response.headers.get('x-tollgate-request-id'));
    assert.equal(row.status, 502);
    assert.equal(row.error_class, 'upstream_decode');
  });

  it('a model group fails over to its next target', async () => {
    mock.setFallback((req) => (upstreamModel(req).endsWith('-a') ? EMPTY(req) : ok(req)));
    const { data, response } = await openai().chat.completions.create({ model: 'g-fo', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    assert.equal(data.choices[0].message.content, 'served');
    assert.equal(response.headers.get('x-tollgate-served-by'), 'fo-b');
  });
});

describe('x-should-retry on an upstream error', () => {
  it('false: the gateway does not retry the target, relays the header, and the SDK does not retry either', async () => {
    mock.setFallback({ status: 500, headers: { 'x-should-retry': 'false' }, json: { error: { message: 'boom', type: 'server_error' } } });
    const err = await callerError(openAICall('m-retry', false, openai(2)));
    assert.equal(err.status, 502);
    assert.equal(err.headers.get('x-should-retry'), 'false');
    assert.equal(mock.requests.length, 1);
  });

  it('false from an Anthropic upstream, anthropic SDK with retries: one upstream call', async () => {
    mock.setFallback({ status: 500, headers: { 'x-should-retry': 'false' }, json: { type: 'error', error: { type: 'api_error', message: 'Internal server error' } } });
    const err = await callerError(anthropicCall('m-anthropic-retry', false, anthropic(2)));
    assert.equal(err.status, 502);
    assert.equal(err.headers.get('x-should-retry'), 'false');
    assert.equal(mock.requests.length, 1);
  });

  it('false: a model group still fails over to its next target', async () => {
    mock.setFallback((req) => (upstreamModel(req) === 'rt-up-a' ? { status: 503, headers: { 'x-should-retry': 'false' } } : ok(req)));
    const { data, response } = await openai().chat.completions.create({ model: 'g-rt', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    assert.equal(data.choices[0].message.content, 'served');
    assert.equal(response.headers.get('x-tollgate-served-by'), 'rt-b');
    assert.deepEqual(mock.requests.map(upstreamModel), ['rt-up-a', 'rt-up-b']);
  });

  it('without the header the target is retried as before (control)', async () => {
    mock.setFallback({ status: 500 });
    const err = await callerError(openAICall('m-retry', false));
    assert.equal(err.status, 502);
    assert.equal(mock.requests.length, 3);
    // The gateway retried: the SDK is told not to multiply the calls.
    assert.equal(err.headers.get('x-should-retry'), 'false');
  });

  it('true on an error the gateway answers after one attempt is relayed (the SDK may retry, as against the upstream)', async () => {
    mock.setFallback({ status: 409, headers: { 'x-should-retry': 'true' }, json: { error: { message: 'busy', type: 'invalid_request_error', code: 'conflict' } } });
    const err = await callerError(openAICall('m-openai', false));
    assert.equal(err.status, 409);
    assert.equal(err.headers.get('x-should-retry'), 'true');
    assert.equal(mock.requests.length, 1);
  });
});

describe('an Anthropic overload on the native /v1/messages path', () => {
  for (const status of [529, 503]) {
    it(`${status} overloaded_error: the anthropic SDK gets 502 with type overloaded_error`, async () => {
      mock.setFallback({ status, json: ANTHROPIC_OVERLOAD });
      const err = await callerError(anthropicCall('m-anthropic', false));
      assert.ok(err instanceof Anthropic.APIError, String(err));
      assert.equal(err.status, 502);
      assert.equal(err.type, 'overloaded_error');
      assert.match(err.apiMessage ?? '', new RegExp(`upstream returned ${status}`));
    });
  }

  it('a 500 api_error stays api_error; the upstream body is not shown', async () => {
    mock.setFallback({ status: 500, json: { type: 'error', error: { type: 'api_error', message: 'internal detail' } } });
    const err = await callerError(anthropicCall('m-anthropic', false));
    assert.equal(err.status, 502);
    assert.equal(err.type, 'api_error');
    assert.doesNotMatch(err.apiMessage, /internal detail/);
  });
});
