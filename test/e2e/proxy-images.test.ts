// E2E: POST /v1/images/generations (spec 2 §4.1: the resolved model's provider label must be
// `openai`) with the official openai SDK: the body forwarded as sent to <api_base>/images/generations,
// the answer relayed, gpt-image tokens recorded (none for DALL·E), 501 for other labels (passed
// over in groups), request checks, and the built-in mock.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import type { Gateway } from '../harness/spawn.ts';
import { useProxyFixture } from '../harness/proxy-fixture.ts';
import type { MockUpstream, RecordedRequest, Reply } from '../harness/mock-upstream.ts';
import { usageOf } from '../harness/echo-upstream.ts';
import { assertRefusedFields, postJson } from '../harness/post-json.ts';

const CALLER_KEY = 'sk-e2e-images-caller-2c9b';
const PIXEL = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

let mock: MockUpstream;
let gw: Gateway;
let client: OpenAI;

useProxyFixture({
  config: { upstream: { timeout_ms: 5000, retries: 0 } },
  resources: (mockUrl) => ({
    _format_version: '1',
    provider_keys: [
      { display_name: 'openai', provider: 'openai', api_key: 'sk-img-secret', api_base: `${mockUrl}/v1` },
      { display_name: 'together', provider: 'together', api_key: 'tg-secret', api_base: `${mockUrl}/together/v1` },
      { display_name: 'local', provider: 'mock', api_key: 'x' },
    ],
    models: [
      { display_name: 'image', provider: 'openai', model_name: 'gpt-image-1', provider_key: 'openai' },
      { display_name: 'dalle', provider: 'openai', model_name: 'dall-e-3', provider_key: 'openai' },
      { display_name: 'flux', provider: 'together', model_name: 'black-forest-labs/FLUX.1-schnell', provider_key: 'together' },
      { display_name: 'image-group', routing: { targets: [{ model: 'flux', priority: 10 }, { model: 'image' }] } },
      { display_name: 'safety-group', routing: { targets: [{ model: 'image' }, { model: 'dalle' }], fallback_on_statuses: [400] } },
      // The model's provider label decides, not its key's.
      { display_name: 'openai-at-together', provider: 'openai', model_name: 'tg-image', provider_key: 'together' },
      { display_name: 'mock-image', provider: 'mock', model_name: 'mock-image-1', provider_key: 'local' },
      { display_name: 'mock-image-group', routing: { targets: [{ model: 'mock-image' }] } },
    ],
    api_keys: [{ display_name: 'caller', key_env: 'E2E_IMAGES_KEY', allowed_models: ['*'] }],
  }),
  env: { E2E_IMAGES_KEY: CALLER_KEY },
  callerKey: CALLER_KEY,
  ready: (fx) => ({ mock, gw, client } = fx),
});

/** gpt-image answers base64 with token usage; DALL·E answers without usage. */
function imagesReply(req: RecordedRequest): Reply {
  const n: number = req.json?.n ?? 1;
  const data = Array.from({ length: n }, () => ({ b64_json: PIXEL }));
  if (req.json?.model === 'dall-e-3') return { json: { created: 1, data } };
  return { json: { created: 1, data, usage: { input_tokens: 12, output_tokens: 272 * n, total_tokens: 12 + 272 * n, input_tokens_details: { text_tokens: 12, image_tokens: 0 } } } };
}

const post = (body: unknown) => postJson(gw.proxyUrl, '/v1/images/generations', CALLER_KEY, body);

test('gpt-image: forwarded as sent to <api_base>/images/generations, the images relayed, its tokens recorded', async () => {
  mock.setFallback(imagesReply);
  const { data, response } = await client.images.generate({ model: 'image', prompt: 'a lighthouse at dawn', n: 2, size: '1024x1024', quality: 'low' }).withResponse();
  assert.equal(data.data!.length, 2);
  assert.equal(data.data![0].b64_json, PIXEL);
  assert.equal(mock.requests.length, 1);
  assert.equal(mock.requests[0].url, '/v1/images/generations');
  assert.equal(mock.requests[0].headers.authorization, 'Bearer sk-img-secret');
  assert.deepEqual(mock.requests[0].json, { model: 'gpt-image-1', prompt: 'a lighthouse at dawn', n: 2, size: '1024x1024', quality: 'low' });
  const row = await usageOf(gw, response.headers.get('x-tollgate-request-id'));
  assert.deepEqual([row.operation, row.requested_model, row.upstream_model, row.status], ['images', 'image', 'gpt-image-1', 200]);
  assert.deepEqual([row.prompt_tokens, row.completion_tokens, row.total_tokens], [12, 544, 556]);
});

test('DALL·E reports no usage: its row has no token counts (not zeros)', async () => {
  mock.setFallback(imagesReply);
  const res = await post({ model: 'dalle', prompt: 'x' });
  assert.equal(res.status, 200, res.text);
  const row = await usageOf(gw, res.headers['x-tollgate-request-id'] as string);
  assert.deepEqual([row.prompt_tokens, row.completion_tokens, row.total_tokens], [null, null, null]);
});

test('a key not labelled openai: a final 501, nothing sent; a group passes it over', async () => {
  mock.setFallback(imagesReply);
  const refused = await post({ model: 'flux', prompt: 'x' });
  assert.equal(refused.status, 501, refused.text);
  assert.equal(refused.headers['x-should-retry'], 'false');
  assert.equal(
    JSON.parse(refused.text).error.message,
    "model 'flux' does not support /v1/images/generations: its provider (together) has no image generation endpoint in this gateway",
  );
  assert.equal(mock.requests.length, 0);
  const served = await client.images.generate({ model: 'image-group', prompt: 'x' });
  assert.equal(served.data![0].b64_json, PIXEL);
  assert.deepEqual(
    mock.requests.map((r) => r.url),
    ['/v1/images/generations'],
  );
});

test("a safety refusal keeps its status and words, is classed content_filter, and a group never routes around it", async () => {
  const refusal = { status: 400, json: { error: { message: 'Your request was rejected by the safety system.', type: 'image_generation_user_error', param: null, code: 'moderation_blocked' } } };
  mock.setFallback(() => refusal);
  const { response } = await client.images
    .generate({ model: 'safety-group', prompt: 'x' })
    .withResponse()
    .then(
      () => assert.fail('the refusal was not relayed'),
      (e: any) => {
        assert.ok(e instanceof OpenAI.BadRequestError, String(e));
        assert.equal(e.code, 'moderation_blocked');
        return { response: e.headers };
      },
    );
  // The group lists 400 in fallback_on_statuses: only a safety decision stops it at the first target.
  assert.deepEqual(
    mock.requests.map((r) => r.json?.model),
    ['gpt-image-1'],
  );
  const row = await usageOf(gw, response.get('x-tollgate-request-id'));
  assert.deepEqual([row.status, row.error_class], [400, 'content_filter']);
});

test("the model's provider label decides, not its key's", async () => {
  mock.setFallback(imagesReply);
  const res = await post({ model: 'openai-at-together', prompt: 'x' });
  assert.equal(res.status, 200, res.text);
  assert.equal(mock.requests[0].url, '/together/v1/images/generations');
});

test('request checks: 400 naming the field before any provider call', async () => {
  const cases: Array<[unknown, string]> = [
    [{ prompt: 'x' }, 'model'],
    [{ model: 'image' }, 'prompt'],
    [{ model: 'image', prompt: '' }, 'prompt'],
    [{ model: 'image', prompt: 'x', n: 0 }, 'n'],
    [{ model: 'image', prompt: 'x', stream: true }, 'stream'],
  ];
  await assertRefusedFields(post, cases);
  assert.equal(mock.requests.length, 0);
});

test('the built-in mock generates one-pixel images, base64 or as a data URL; its usage is recorded as an upstream answer is', async () => {
  const { data: b64, response } = await client.images.generate({ model: 'mock-image', prompt: 'a cat', n: 3 }).withResponse();
  const row = await usageOf(gw, response.headers.get('x-tollgate-request-id'));
  assert.deepEqual([row.prompt_tokens, row.completion_tokens, row.total_tokens], [b64.usage!.input_tokens, 3, b64.usage!.total_tokens]);
  assert.deepEqual(
    b64.data!.map((d) => d.b64_json),
    [PIXEL, PIXEL, PIXEL],
  );
  assert.ok(b64.usage!.input_tokens > 0);
  assert.equal(b64.data![0].revised_prompt, undefined, 'as gpt-image, no revised prompt');
  const url = await client.images.generate({ model: 'mock-image', prompt: 'a cat', response_format: 'url' });
  assert.equal(url.data![0].url, `data:image/png;base64,${PIXEL}`);
  const tooMany = await post({ model: 'mock-image', prompt: 'x', n: 11 });
  assert.equal(tooMany.status, 400);
  assert.equal(JSON.parse(tooMany.text).error.param, 'n');
  // In a group the refusal is the target's answer: final, and no target named as serving it.
  const grouped = await post({ model: 'mock-image-group', prompt: 'x', n: 11 });
  assert.equal(grouped.status, 400);
  assert.equal(grouped.headers['x-tollgate-served-by'], undefined);
  assert.equal(mock.requests.length, 0);
});
