import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GatewayError } from '../../lib/errors.ts';
import { openAIErrorBody, parseChatRequest, readOpenAIError, scanUsage } from './openai-chat.ts';

const parse = (v: unknown): unknown => parseChatRequest(Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)));

function rejects(v: unknown, status: number, param: string | null, re: RegExp): void {
  assert.throws(
    () => parse(v),
    (e: unknown) => e instanceof GatewayError && e.status === status && e.param === param && re.test(e.message),
  );
}

test('accepts every lowercase role', () => {
  const roles = ['system', 'developer', 'user', 'assistant', 'tool'];
  const req = parse({ model: 'm', messages: roles.map((role) => ({ role, content: 'x' })) });
  assert.equal((req as { messages: unknown[] }).messages.length, 5);
});

test('rejects any other role, including different casing, with the field path', () => {
  for (const role of ['User', 'SYSTEM', 'Developer', 'function', '', 7]) {
    rejects({ model: 'm', messages: [{ role: 'user', content: 'a' }, { role, content: 'b' }] }, 400, 'messages[1].role', /messages\[1\]\.role/);
  }
  const err = (() => {
    try {
      parse({ model: 'm', messages: [{ role: 'User' }] });
    } catch (e) {
      return e as GatewayError;
    }
    throw new Error('expected a throw');
  })();
  assert.equal(openAIErrorBody(err).error.type, 'invalid_request_error');
});

test('rejects malformed bodies with precise messages', () => {
  rejects('{not json', 400, null, /not valid JSON/);
  rejects([1, 2], 400, null, /JSON object/);
  rejects({ messages: [] }, 400, 'model', /'model' is required/);
  rejects({ model: '', messages: [] }, 400, 'model', /'model'/);
  // The name is echoed and recorded with the request: a 10 MB one is refused, not logged.
  rejects({ model: 'm'.repeat(513), messages: [] }, 400, 'model', /at most 512 characters/);
  rejects({ model: 'm' }, 400, 'messages', /'messages'/);
  rejects({ model: 'm', messages: ['hi'] }, 400, 'messages[0]', /must be an object/);
  rejects({ model: 'm', messages: [], stream: 'yes' }, 400, 'stream', /boolean/);
  for (const bad of ['x', [1, 2]]) rejects({ model: 'm', messages: [], stream_options: bad }, 400, 'stream_options', /must be an object/);
});

test('null stream and stream_options are taken as OpenAI takes them (an SDK sends null for an explicit None)', () => {
  assert.deepEqual(parse({ model: 'm', messages: [], stream: null, stream_options: null }), { model: 'm', messages: [], stream: null, stream_options: null });
});

test('reads upstream error envelopes, tolerating shapes', () => {
  assert.deepEqual(readOpenAIError('{"error":{"message":"bad","type":"invalid_request_error","param":"x","code":"c"}}'), {
    message: 'bad', type: 'invalid_request_error', param: 'x', code: 'c',
  });
  assert.deepEqual(readOpenAIError('{"error":"plain"}'), { message: 'plain' });
  assert.equal(readOpenAIError('<html>'), undefined);
  assert.equal(readOpenAIError(''), undefined);
  // Vendors without the envelope: vLLM and Cohere (`message`), Jina and FastAPI servers (`detail`).
  assert.deepEqual(readOpenAIError('{"object":"error","message":"too long","type":"BadRequestError","code":400}'), { message: 'too long' });
  assert.deepEqual(readOpenAIError('{"id":"x","message":"invalid request: documents must not be empty"}'), { message: 'invalid request: documents must not be empty' });
  assert.deepEqual(readOpenAIError('{"detail":"Invalid API key"}'), { message: 'Invalid API key' });
  assert.deepEqual(readOpenAIError('{"detail":[{"loc":["body","query"],"msg":"field required","type":"missing"},{"msg":"bad top_n"}]}'), { message: 'field required; bad top_n' });
  assert.equal(readOpenAIError('{"detail":[1]}'), undefined);
});

test('scans usage only when it is an object', () => {
  assert.deepEqual(scanUsage('{"id":"1","usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}'), {
    prompt_tokens: 1, completion_tokens: 2, total_tokens: 3,
  });
  assert.equal(scanUsage('{"id":"1","usage":null}'), undefined);
  assert.equal(scanUsage('{"id":"1"}'), undefined);
});
