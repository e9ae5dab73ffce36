import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { gzipSync } from 'node:zlib';
import { jsonResponseText, responseText, SseTextCollector, trimContent, trimUtf8, utf8Prefix, type ResponseBody } from './content-text.ts';

const fixture = (path: string): Buffer => readFileSync(new URL(`../ai/${path}`, import.meta.url));
/** Recorded chat chunks (a JSON array) framed as the SSE body OpenAI sends. */
const chatSse = (path: string): Buffer =>
  Buffer.from(`${(JSON.parse(fixture(path).toString('utf8')) as unknown[]).map((c) => `data: ${JSON.stringify(c)}\n\n`).join('')}data: [DONE]\n\n`);
const body = (raw: Buffer | string, over: Partial<ResponseBody> = {}): ResponseBody => ({
  raw: Buffer.isBuffer(raw) ? raw : Buffer.from(raw),
  rawTruncated: false,
  contentType: undefined,
  contentEncoding: undefined,
  ...over,
});
const LIMIT = 131072;

const chatCompletion = {
  id: 'chatcmpl-1',
  object: 'chat.completion',
  model: 'gpt-4o-mini',
  choices: [{ index: 0, message: { role: 'assistant', content: 'Paris is the capital.', refusal: null }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 9, completion_tokens: 5, total_tokens: 14 },
};

describe('UTF-8 bounds', () => {
  test('trimUtf8 cuts on a character boundary and says so', () => {
    assert.deepEqual(trimUtf8('abc', 3), { text: 'abc', cut: false });
    assert.deepEqual(trimUtf8('abcd', 3), { text: 'abc', cut: true });
    // 'é' is 2 bytes, '🌍' 4: a cut inside either drops the whole character.
    assert.deepEqual(trimUtf8('aé', 2), { text: 'a', cut: true });
    assert.deepEqual(trimUtf8('a🌍b', 4), { text: 'a', cut: true });
    assert.deepEqual(trimUtf8('a🌍b', 5), { text: 'a🌍', cut: true });
    assert.deepEqual(trimUtf8('日本語', 8), { text: '日本', cut: true });
    assert.deepEqual(trimUtf8('日本語', 9), { text: '日本語', cut: false });
  });

  test('utf8Prefix reads at most maxBytes of a buffer, never half a character', () => {
    const buf = Buffer.from('hé🌍!');
    assert.equal(utf8Prefix(buf, 100), 'hé🌍!');
    assert.equal(utf8Prefix(buf, 3), 'hé');
    assert.equal(utf8Prefix(buf, 6), 'hé');
    assert.equal(utf8Prefix(buf, 7), 'hé🌍');
    assert.ok(!utf8Prefix(buf, 4).includes('\ufffd'));
    // Bytes that went on past the buffer: a character the buffer ends inside is dropped.
    assert.equal(utf8Prefix(buf.subarray(0, 5), 100, true), 'hé');
    assert.equal(utf8Prefix(buf.subarray(0, 5), 100), 'hé\ufffd', 'a whole body keeps what it holds');
  });

  test('trimContent trims each side to the cap and marks truncation; untouched content is returned as is', () => {
    const c = { request: '{"prompt":"héllo world"}', response: 'short', truncated: false };
    assert.equal(trimContent(c, 1000), c);
    const t = trimContent(c, 12);
    assert.deepEqual(t, { request: '{"prompt":"h', response: 'short', truncated: true });
    assert.ok(Buffer.byteLength(t.request) <= 12);
    assert.equal(trimContent({ ...c, truncated: true }, 1000).truncated, true, 'an earlier cut stays marked');
  });
});

describe('JSON responses', () => {
  test('OpenAI chat completion: choices[].message.content', () => {
    assert.equal(jsonResponseText(chatCompletion), 'Paris is the capital.');
    const two = { ...chatCompletion, choices: [chatCompletion.choices[0], { index: 1, message: { role: 'assistant', content: 'Lyon.' } }] };
    assert.equal(jsonResponseText(two), 'Paris is the capital.\nLyon.');
  });

  test('legacy completion: choices[].text', () => {
    assert.equal(jsonResponseText({ object: 'text_completion', choices: [{ index: 0, text: 'once upon' }] }), 'once upon');
  });

  test('Anthropic message (recorded): the text blocks, not thinking or tool_use', () => {
    assert.equal(jsonResponseText(JSON.parse(fixture('providers/anthropic/__fixtures__/message-text.json').toString())), 'Hello! How can I help?');
    assert.equal(jsonResponseText(JSON.parse(fixture('providers/anthropic/__fixtures__/message-tool-use.json').toString())), 'Let me look that up.');
  });

  test('OpenAI responses: output[].content[] of type output_text', () => {
    const r = {
      object: 'response',
      output: [
        { type: 'reasoning', summary: [] },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Bonjour', annotations: [] }, { type: 'output_text', text: ' !' }] },
      ],
    };
    assert.equal(jsonResponseText(r), 'Bonjour !');
  });

  test('other JSON is no known shape', () => {
    assert.equal(jsonResponseText({ object: 'list', data: [{ embedding: [0.1] }] }), undefined);
    assert.equal(jsonResponseText({ error: { message: 'bad' } }), undefined);
    assert.equal(jsonResponseText([1, 2]), undefined);
    assert.equal(jsonResponseText('text'), undefined);
  });
});

describe('SSE responses', () => {
  test('OpenAI chat stream (recorded): the deltas concatenated', () => {
    const r = responseText(body(chatSse('protocols/__fixtures__/chat-chunks-text.json'), { contentType: 'text/event-stream' }), LIMIT);
    assert.deepEqual(r, { text: 'Hello, wörld! 👋', truncated: false });
  });

  test('Anthropic stream (recorded): text_delta text concatenated', () => {
    const r = responseText(body(fixture('protocols/__fixtures__/anthropic-text.sse'), { contentType: 'text/event-stream; charset=utf-8' }), LIMIT);
    assert.deepEqual(r, { text: 'Bonjour ! Le mot "model":"x" reste intact — 日本語 ✓', truncated: false });
    const provider = responseText(body(fixture('providers/anthropic/__fixtures__/text-stream.sse')), LIMIT);
    assert.ok(provider.text.startsWith('Héllo wörld 🌍, こんにちは!'), 'sniffed as SSE without a content-type');
  });

  test('OpenAI responses stream: response.output_text.delta', () => {
    const sse = [
      'event: response.created\ndata: {"type":"response.created","response":{"id":"r"}}\n\n',
      'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"Hi "}\n\n',
      'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"there"}\n\n',
      'event: response.completed\ndata: {"type":"response.completed","response":{"id":"r"}}\n\n',
    ].join('');
    assert.equal(responseText(body(sse, { contentType: 'text/event-stream' }), LIMIT).text, 'Hi there');
  });

  test('pieces split anywhere (inside lines, CRLF framing, inside a character) give the same text', () => {
    const whole = Buffer.from(fixture('protocols/__fixtures__/anthropic-text.sse').toString('utf8').replaceAll('\n', '\r\n'));
    for (const size of [1, 3, 7, 64]) {
      const c = new SseTextCollector(LIMIT);
      const d = new StringDecoder('utf8');
      for (let i = 0; i < whole.length; i += size) c.push(d.write(whole.subarray(i, i + size)));
      c.end();
      assert.equal(c.text, 'Bonjour ! Le mot "model":"x" reste intact — 日本語 ✓', `pieces of ${size}`);
    }
  });

  test('several choices keep their own text; data split over lines is joined', () => {
    const c = new SseTextCollector(LIMIT);
    c.push('data: {"choices":[{"index":0,"delta":{"content":"a"}},{"index":1,"delta":{"content":"x"}}]}\n\n');
    c.push('data: {"choices":[{"index":1,\ndata: "delta":{"content":"y"}}]}\n\n');
    c.push('data: {"choices":[{"index":0,"delta":{"content":"b"}}]}\n\ndata: [DONE]\n\n');
    c.end();
    assert.equal(c.text, 'ab\nxy');
  });

  test('the text is bounded: at most maxBytes, cut on a character, truncated set', () => {
    const c = new SseTextCollector(10);
    for (const piece of ['héllo', ' wörld', ' again']) c.push(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: piece } }] })}\n\n`);
    assert.equal(c.text, 'héllo wö');
    assert.ok(Buffer.byteLength(c.text) <= 10);
    assert.equal(c.truncated, true);
  });
});

describe('raw fallback', () => {
  test('a chat JSON body is extracted; the same body cut short is raw, capped and truncated', () => {
    const json = JSON.stringify(chatCompletion);
    assert.deepEqual(responseText(body(json, { contentType: 'application/json' }), LIMIT), { text: 'Paris is the capital.', truncated: false });
    const cut = Buffer.from(json).subarray(0, 40);
    assert.deepEqual(responseText(body(cut, { rawTruncated: true, contentType: 'application/json' }), LIMIT), { text: json.slice(0, 40), truncated: true });
  });

  test('unknown JSON, an error envelope, plain text and a tool-only answer are raw', () => {
    const embeddings = '{"object":"list","data":[{"embedding":[0.5]}]}';
    assert.deepEqual(responseText(body(embeddings), LIMIT), { text: embeddings, truncated: false });
    const error = '{"error":{"message":"no","type":"invalid_request_error"}}';
    assert.equal(responseText(body(error), LIMIT).text, error);
    assert.equal(responseText(body('plain words'), LIMIT).text, 'plain words');
    const framed = chatSse('protocols/__fixtures__/chat-chunks-tools.json');
    assert.equal(responseText(body(framed, { contentType: 'text/event-stream' }), LIMIT).text, framed.toString('utf8'), 'no text deltas: the raw stream');
  });

  test('a raw body over the limit is cut to it on a character boundary', () => {
    const r = responseText(body('ab🌍cd'), 4);
    assert.deepEqual(r, { text: 'ab', truncated: true });
  });

  test('binary bytes come out as UTF-8 text (replacement characters), bounded', () => {
    const r = responseText(body(Buffer.from([0xff, 0xfe, 0x41])), LIMIT);
    assert.equal(r.text, '\ufffd\ufffdA');
  });

  test('a gzip body is decoded before extraction, even when cut short', () => {
    const json = JSON.stringify(chatCompletion);
    assert.equal(responseText(body(gzipSync(json), { contentEncoding: 'gzip' }), LIMIT).text, 'Paris is the capital.');
    const long = 'x'.repeat(5000);
    const zipped = gzipSync(long);
    const partial = responseText(body(zipped.subarray(0, zipped.length - 10), { contentEncoding: 'gzip', rawTruncated: true }), LIMIT);
    assert.equal(partial.truncated, true);
    assert.ok(/^x+$/.test(partial.text), 'the decodable part, as text');
  });
});
