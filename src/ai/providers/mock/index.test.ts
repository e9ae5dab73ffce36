import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MOCK_EMBEDDING_DIMENSIONS, MOCK_IMAGE_PNG_BASE64, MOCK_MAX_DIMENSIONS, MOCK_MAX_INPUTS, MOCK_MAX_NUMBERS, mockAdapter } from './index.ts';
import { GatewayError } from '../../../lib/errors.ts';

const loose = (v: unknown): any => v;

test('answers deterministically, echoing the last user message', () => {
  const body = { model: 'm', messages: [{ role: 'user', content: 'first' }, { role: 'assistant', content: 'x' }, { role: 'user', content: [{ type: 'text', text: 'hello there' }] }] };
  const a = mockAdapter.local!.chat(body, 'mock-1');
  const b = mockAdapter.local!.chat(body, 'mock-1');
  assert.equal(a.kind, 'json');
  assert.deepEqual(loose(a).body.choices, loose(b).body.choices);
  const msg = loose(a).body.choices[0].message.content;
  assert.equal(msg, 'Mock reply from Tollgate. You said: hello there');
});

test('a text part whose text is not a string is skipped, never converted (it may not convert)', () => {
  const body = { model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: { toString: 1 } }, { type: 'text', text: 'ok' }] }] };
  const reply = mockAdapter.local!.chat(body, 'mock-1');
  assert.equal(loose(reply).body.choices[0].message.content, 'Mock reply from Tollgate. You said: ok');
});

test('streams the same text word by word, with usage only when asked', () => {
  const body = { model: 'm', stream: true, messages: [{ role: 'user', content: 'one two' }] };
  const r = mockAdapter.local!.chat(body, 'mock-1');
  assert.equal(r.kind, 'sse');
  const chunks: { choices: { delta: { content?: string }; finish_reason: string | null }[] }[] = loose(r).chunks;
  const joined = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
  assert.equal(joined, 'Mock reply from Tollgate. You said: one two');
  assert.equal(chunks.at(-1)!.choices[0].finish_reason, 'stop');
  const withUsage: { chunks: { usage?: unknown }[] } = loose(mockAdapter.local!.chat({ ...body, stream_options: { include_usage: true } }, 'mock-1'));
  assert.ok(withUsage.chunks.at(-1)!.usage);
});

test('embeddings: a unit vector per input, from its text alone; base64 is the same vector as float32 bytes', () => {
  const embed = mockAdapter.local!.embeddings!;
  const a = loose(embed({ model: 'm', input: ['x', 'y', 'x'] }, 'mock-e'));
  assert.equal(a.object, 'list');
  assert.equal(a.model, 'mock-e');
  assert.deepEqual(a.data.map((d: any) => d.index), [0, 1, 2]);
  assert.equal(a.data[0].embedding.length, MOCK_EMBEDDING_DIMENSIONS);
  assert.deepEqual(a.data[0].embedding, a.data[2].embedding);
  assert.notDeepEqual(a.data[0].embedding, a.data[1].embedding);
  assert.ok(Math.abs(Math.hypot(...a.data[0].embedding) - 1) < 1e-6);
  assert.deepEqual(a.usage, { prompt_tokens: 3, total_tokens: 3 });
  const b = loose(embed({ model: 'm', input: 'x', encoding_format: 'base64', dimensions: 4 }, 'mock-e'));
  const bytes = Buffer.from(b.data[0].embedding, 'base64');
  const floats = Array.from({ length: 4 }, (_, i) => bytes.readFloatLE(i * 4));
  assert.deepEqual(floats, loose(embed({ model: 'm', input: 'x', dimensions: 4 }, 'mock-e')).data[0].embedding);
  // Token ids embed as their text.
  assert.equal(loose(embed({ model: 'm', input: [1, 2] }, 'mock-e')).data.length, 1);
  assert.equal(loose(embed({ model: 'm', input: [[1, 2], [3]] }, 'mock-e')).data.length, 2);
});

test('completions: the prompt echoed, as JSON or as chunks ending with finish and (when asked) usage', () => {
  const complete = mockAdapter.local!.completions!;
  const json = loose(complete({ model: 'm', prompt: ['first', 'second'] }, 'mock-c'));
  assert.equal(json.kind, 'json');
  assert.equal(json.body.object, 'text_completion');
  assert.equal(json.body.model, 'mock-c');
  assert.equal(json.body.choices[0].text, 'Mock completion from Tollgate. You said: first');
  assert.equal(json.body.usage.total_tokens, json.body.usage.prompt_tokens + json.body.usage.completion_tokens);
  const sse = loose(complete({ model: 'm', prompt: [1, 2], stream: true, stream_options: { include_usage: true } }, 'mock-c'));
  assert.equal(sse.kind, 'sse');
  const texts = sse.chunks.filter((c: any) => c.choices.length > 0).map((c: any) => c.choices[0].text).join('');
  assert.equal(texts, 'Mock completion from Tollgate. You said: 1 2');
  assert.equal(sse.chunks.at(-2).choices[0].finish_reason, 'stop');
  assert.deepEqual(sse.chunks.at(-1).choices, []);
  assert.ok(sse.chunks.at(-1).usage.prompt_tokens > 0);
});

test('rerank: by the share of query words a document holds, best first, ties by index, top_n kept', () => {
  const r = loose(mockAdapter.local!.rerank!({ model: 'm', query: 'Red apple', documents: ['green pear', { text: 'a red apple' }, 'red car', 'red apple pie'], top_n: 3 }, 'mock-r'));
  assert.equal(r.model, 'mock-r');
  assert.deepEqual(r.results, [
    { index: 1, relevance_score: 1 },
    { index: 3, relevance_score: 1 },
    { index: 2, relevance_score: 0.5 },
  ]);
  assert.equal(r.usage.prompt_tokens, r.usage.total_tokens);
  assert.ok(r.usage.prompt_tokens > 0);
  // Words are letters and digits of any script.
  const u = loose(mockAdapter.local!.rerank!({ model: 'm', query: 'São Paulo 苹果', documents: ['sao', 'são paulo', '苹果 x'] }, 'mock-r'));
  assert.deepEqual(u.results.map((x: any) => [x.index, Math.round(x.relevance_score * 3)]), [[1, 2], [2, 1], [0, 0]]);
});

test('images: n one-pixel PNGs, base64 or a data URL, with gpt-image-style usage; n past 10 refused', () => {
  const gen = mockAdapter.local!.images!;
  const b64 = loose(gen({ model: 'm', prompt: 'a cat', n: 2 }, 'mock-i'));
  assert.deepEqual(b64.data.map((d: any) => d.b64_json), [MOCK_IMAGE_PNG_BASE64, MOCK_IMAGE_PNG_BASE64]);
  assert.equal(Buffer.from(MOCK_IMAGE_PNG_BASE64, 'base64').subarray(1, 4).toString(), 'PNG');
  assert.equal(b64.usage.total_tokens, b64.usage.input_tokens + b64.usage.output_tokens);
  assert.equal(loose(gen({ model: 'm', prompt: 'x', response_format: 'url' }, 'mock-i')).data[0].url, `data:image/png;base64,${MOCK_IMAGE_PNG_BASE64}`);
  assert.throws(() => gen({ model: 'm', prompt: 'x', n: 11 }, 'mock-i'), (e: unknown) => e instanceof GatewayError && e.param === 'n');
});

test('speech: a WAV of 8 kHz 8-bit silence, 50 ms a character, at most 10 s', () => {
  const speak = mockAdapter.local!.speech!;
  const short = speak({ model: 'm', input: 'abcd', voice: 'alloy' }, 'mock-s');
  assert.equal(short.contentType, 'audio/wav');
  assert.equal(short.audio.subarray(0, 4).toString('latin1'), 'RIFF');
  assert.equal(short.audio.readUInt32LE(4), short.audio.length - 8);
  assert.equal(short.audio.readUInt32LE(40), 1600);
  assert.ok(short.audio.subarray(44).every((b) => b === 128), 'silence');
  assert.equal(speak({ model: 'm', input: 'x'.repeat(10_000), voice: 'alloy' }, 'mock-s').audio.readUInt32LE(40), 80_000);
});

test('embeddings: what the mock refuses, as a provider would, with the field named', () => {
  const embed = mockAdapter.local!.embeddings!;
  const refusal = (body: Record<string, unknown>) => {
    try {
      embed({ model: 'm', ...body }, 'mock-e');
    } catch (e) {
      assert.ok(e instanceof GatewayError);
      return [e.status, e.param];
    }
    return 'answered';
  };
  assert.deepEqual(refusal({ input: Array(MOCK_MAX_INPUTS + 1).fill('x') }), [400, 'input']);
  assert.equal(refusal({ input: Array(MOCK_MAX_INPUTS).fill('x') }), 'answered');
  for (const dimensions of [0, -3, 1.5, '8', MOCK_MAX_DIMENSIONS + 1]) assert.deepEqual(refusal({ input: 'x', dimensions }), [400, 'dimensions'], String(dimensions));
  assert.equal(refusal({ input: 'x', dimensions: MOCK_MAX_DIMENSIONS }), 'answered');
  assert.equal(refusal({ input: 'x', dimensions: null, encoding_format: null }), 'answered');
  // A small request for many wide vectors: refused before anything is built.
  assert.deepEqual(refusal({ input: Array(100).fill('x'), dimensions: 3072 }), [400, 'input']);
  assert.equal(refusal({ input: Array(MOCK_MAX_NUMBERS / 1024).fill('x'), dimensions: 1024 }), 'answered');
  assert.deepEqual(refusal({ input: 'x', encoding_format: 'int8' }), [400, 'encoding_format']);
});
