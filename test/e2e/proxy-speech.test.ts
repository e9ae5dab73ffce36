// E2E: POST /v1/audio/speech (spec 2 §4.1: forwarded to the upstream audio route, no translation)
// with the official openai SDK: the body forwarded as sent, the audio relayed byte for byte as it
// arrives with the upstream's content type, a body cut or stalled after its first byte cutting the
// caller's connection (recorded 502 / 504), failures before it answered as errors, 501 for a
// target without a speech endpoint, request checks, and the built-in mock's silence.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import type { Gateway } from '../harness/spawn.ts';
import { useProxyFixture } from '../harness/proxy-fixture.ts';
import type { MockUpstream } from '../harness/mock-upstream.ts';
import { usageOf } from '../harness/echo-upstream.ts';
import { assertRefusedFields, postJson } from '../harness/post-json.ts';

const CALLER_KEY = 'sk-e2e-speech-caller-7e1d';
const STREAM_TIMEOUT_MS = 800;

let mock: MockUpstream;
let gw: Gateway;
let client: OpenAI;

useProxyFixture({
  config: { upstream: { timeout_ms: 5000, stream_timeout_ms: STREAM_TIMEOUT_MS, retries: 0 } },
  resources: (mockUrl) => ({
    _format_version: '1',
    provider_keys: [
      { display_name: 'openai', provider: 'openai', api_key: 'sk-tts-secret', api_base: `${mockUrl}/v1` },
      { display_name: 'claude', provider: 'anthropic', api_key: 'sk-ant', api_base: mockUrl },
      { display_name: 'local', provider: 'mock', api_key: 'x' },
    ],
    models: [
      { display_name: 'tts', provider: 'openai', model_name: 'gpt-4o-mini-tts', provider_key: 'openai' },
      { display_name: 'claude', provider: 'anthropic', model_name: 'claude-sonnet-4-5', provider_key: 'claude' },
      { display_name: 'mock-tts', provider: 'mock', model_name: 'mock-tts-1', provider_key: 'local' },
      { display_name: 'tts-health', provider: 'openai', model_name: 'tts-health-up', provider_key: 'openai' },
    ],
    api_keys: [{ display_name: 'caller', key_env: 'E2E_SPEECH_KEY', allowed_models: ['*'] }],
  }),
  env: { E2E_SPEECH_KEY: CALLER_KEY },
  callerKey: CALLER_KEY,
  ready: (fx) => ({ mock, gw, client } = fx),
});

/** Audio-like bytes: every byte value, so nothing is re-encoded on the way. */
const AUDIO = [Buffer.from([0xff, 0xf3, 0x44, 0xc4, 0x00]), Buffer.from(Array.from({ length: 256 }, (_, i) => i)), Buffer.from([0x00, 0x80, 0xff])];

function post(body: unknown) {
  return fetch(`${gw.proxyUrl}/v1/audio/speech`, {
    method: 'POST',
    headers: { authorization: `Bearer ${CALLER_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

test('forwarded as sent to <api_base>/audio/speech; the audio relayed byte for byte with its content type', async () => {
  mock.script({ chunks: AUDIO, headers: { 'content-type': 'audio/mpeg' } });
  const res = await client.audio.speech.create({ model: 'tts', voice: 'alloy', input: 'Hello there.', instructions: 'cheerful', response_format: 'mp3' });
  assert.equal(res.headers.get('content-type'), 'audio/mpeg');
  assert.deepEqual(Buffer.from(await res.arrayBuffer()), Buffer.concat(AUDIO));
  assert.equal(mock.requests[0].url, '/v1/audio/speech');
  assert.equal(mock.requests[0].headers.authorization, 'Bearer sk-tts-secret');
  assert.deepEqual(mock.requests[0].json, { model: 'gpt-4o-mini-tts', voice: 'alloy', input: 'Hello there.', instructions: 'cheerful', response_format: 'mp3' });
  const row = await usageOf(gw, res.headers.get('x-tollgate-request-id'));
  assert.deepEqual([row.operation, row.requested_model, row.upstream_model, row.status, row.prompt_tokens], ['speech', 'tts', 'gpt-4o-mini-tts', 200, null]);
});

test('the first audio bytes reach the caller while the upstream is still speaking', async () => {
  const GAP = 250;
  const chunks = [...AUDIO, ...AUDIO]; // 6 pieces: the last about 5 gaps after the first
  mock.script({ chunks, chunkDelayMs: GAP, headers: { 'content-type': 'audio/mpeg' } });
  const t0 = performance.now();
  const res = await post({ model: 'tts', voice: 'alloy', input: 'x' });
  const reader = res.body!.getReader();
  const first = await reader.read();
  const firstAt = performance.now() - t0;
  assert.deepEqual(Buffer.from(first.value!), AUDIO[0]);
  const got = [Buffer.from(first.value!)];
  for (let r = await reader.read(); !r.done; r = await reader.read()) got.push(Buffer.from(r.value));
  const endAt = performance.now() - t0;
  assert.deepEqual(Buffer.concat(got), Buffer.concat(chunks));
  // Buffered, the first bytes would come with the last; a loaded machine may delay the first read.
  assert.ok(endAt - firstAt > GAP * 2, `first bytes at ${firstAt.toFixed(0)} ms, end at ${endAt.toFixed(0)} ms`);
});

test('a body cut or stalled after its first bytes cuts the caller connection, recorded 502 / 504', async () => {
  mock.script({ sse: ['ID3-first-bytes', 'never-sent'], done: false, disconnectAfterEvents: 1, headers: { 'content-type': 'audio/mpeg' } });
  const cut = await post({ model: 'tts', voice: 'alloy', input: 'x' });
  assert.equal(cut.status, 200);
  await assert.rejects(cut.arrayBuffer(), 'the caller sees a short body, not a clean end');
  assert.equal((await usageOf(gw, cut.headers.get('x-tollgate-request-id'))).status, 502);

  mock.script({ sse: ['ID3-first-bytes', 'late'], done: false, delayBetweenEventsMs: STREAM_TIMEOUT_MS * 3, headers: { 'content-type': 'audio/mpeg' } });
  const stalled = await post({ model: 'tts', voice: 'alloy', input: 'x' });
  await assert.rejects(stalled.arrayBuffer());
  const row = await usageOf(gw, stalled.headers.get('x-tollgate-request-id'));
  assert.deepEqual([row.status, row.error_class], [504, 'timeout']);
});

test("a failure after the first byte counts against the target's health, as a stream's does", async () => {
  mock.script({ sse: ['ID3-first-bytes', 'late'], done: false, delayBetweenEventsMs: STREAM_TIMEOUT_MS * 3, headers: { 'content-type': 'audio/mpeg' } });
  const stalled = await post({ model: 'tts-health', voice: 'alloy', input: 'x' });
  await assert.rejects(stalled.arrayBuffer());
  await usageOf(gw, stalled.headers.get('x-tollgate-request-id'));
  const status = (await (await fetch(`${gw.metricsUrl}/status/models`)).json()) as { models: Array<Record<string, unknown>> };
  const row = status.models.find((m) => m.model === 'tts-health');
  assert.equal(row?.consecutive_failures, 1, JSON.stringify(row));
  assert.equal(row?.last_error, 'timeout');
});

test('no audio is no answer: an empty 200, or a JSON error under a 200, is a 502 before any byte', async () => {
  mock.script({ status: 200, headers: { 'content-type': 'audio/mpeg' }, body: '' });
  const empty = await post({ model: 'tts', voice: 'alloy', input: 'x' });
  assert.equal(empty.status, 502);
  assert.equal(((await empty.json()) as any).error.code, 'upstream_decode');
  mock.script({ json: { error: { message: 'quota exhausted', type: 'insufficient_quota', code: 'insufficient_quota' } } });
  const inBand = await post({ model: 'tts', voice: 'alloy', input: 'x' });
  assert.equal(inBand.status, 502);
  assert.equal(((await inBand.json()) as any).error.message, 'quota exhausted');
  // The upstream is asked for whatever audio type it sends.
  assert.equal(mock.requests[0].headers.accept, '*/*');
});

test('a failure before the first byte is an ordinary error answer', async () => {
  mock.script({ status: 400, json: { error: { message: "Invalid value for 'voice'", type: 'invalid_request_error', param: 'voice', code: null } } });
  await assert.rejects(client.audio.speech.create({ model: 'tts', voice: 'nobody' as 'alloy', input: 'x' }), (e: any) => {
    assert.ok(e instanceof OpenAI.BadRequestError, String(e));
    assert.equal(e.param, 'voice');
    return true;
  });
  mock.script({ status: 503, body: 'down' });
  const down = await post({ model: 'tts', voice: 'alloy', input: 'x' });
  assert.equal(down.status, 502);
  assert.equal(((await down.json()) as any).error.message, 'upstream returned 503 Service Unavailable');
});

test('a target without a speech endpoint is a final 501; request checks name the field', async () => {
  const refused = await post({ model: 'claude', voice: 'alloy', input: 'x' });
  assert.equal(refused.status, 501);
  assert.equal(refused.headers.get('x-should-retry'), 'false');
  assert.equal(((await refused.json()) as any).error.message, "model 'claude' does not support /v1/audio/speech: its provider (anthropic) has no speech endpoint in this gateway");
  await assertRefusedFields((body) => postJson(gw.proxyUrl, '/v1/audio/speech', CALLER_KEY, body), [
    [{ model: 'tts', voice: 'alloy' }, 'input'],
    [{ model: 'tts', voice: 'alloy', input: '' }, 'input'],
    [{ model: 'tts', input: 'x' }, 'voice'],
    [{ input: 'x', voice: 'alloy' }, 'model'],
  ]);
  assert.equal(mock.requests.length, 0);
});

test('the built-in mock speaks silence: a WAV, 50 ms a character', async () => {
  const res = await client.audio.speech.create({ model: 'mock-tts', voice: 'alloy', input: 'twenty characters!!!' });
  assert.equal(res.headers.get('content-type'), 'audio/wav');
  const wav = Buffer.from(await res.arrayBuffer());
  assert.equal(wav.subarray(0, 4).toString('latin1'), 'RIFF');
  assert.equal(wav.subarray(8, 12).toString('latin1'), 'WAVE');
  assert.equal(wav.readUInt32LE(40), 8000); // 20 characters × 50 ms × 8 kHz
  assert.equal(wav.length, 44 + 8000);
  assert.equal(mock.requests.length, 0);
});
