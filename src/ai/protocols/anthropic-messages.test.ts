import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ERROR_CODES, GatewayError, type ErrorCode } from '../../lib/errors.ts';
import {
  anthropicErrorBody,
  anthropicErrorType,
  anthropicStreamErrorFrame,
  anthropicUsageToCanonical,
  parseCountTokensRequest,
  parseMessagesRequest,
  readAnthropicError,
  scanMessagesUsage,
} from './anthropic-messages.ts';

const buf = (v: unknown): Buffer => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v));
const ok = { model: 'claude', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] };

function rejects(parse: (b: Buffer) => unknown, v: unknown, code: string, param: string | null, re: RegExp): void {
  assert.throws(
    () => parse(buf(v)),
    (e: unknown) => e instanceof GatewayError && e.status === 400 && e.code === code && e.param === param && re.test(e.message),
    `expected ${code} on ${param} for ${JSON.stringify(v)}`,
  );
}

test('accepts a full Messages request and returns it as sent', () => {
  const body = {
    ...ok,
    system: [{ type: 'text', text: 'be brief', cache_control: { type: 'ephemeral' } }],
    stream: true,
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'hi' }, { type: 'image', source: { type: 'url', url: 'https://x/y.png' } }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'f', input: {} }] },
      { role: 'system', content: 'mid-conversation instruction' },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'done' }] },
    ],
    thinking: { type: 'enabled', budget_tokens: 2048 },
  };
  assert.deepEqual(parseMessagesRequest(buf(body)), body);
  assert.deepEqual(parseMessagesRequest(buf({ ...ok, system: 'plain' })).system, 'plain');
});

test('every malformed Messages body is a 400 naming the field', () => {
  const p = parseMessagesRequest;
  rejects(p, '{nope', 'invalid_json', null, /not valid JSON/);
  rejects(p, '[1]', 'invalid_request', null, /JSON object/);
  rejects(p, 'null', 'invalid_request', null, /JSON object/);
  rejects(p, { ...ok, model: undefined }, 'invalid_request', 'model', /'model' is required/);
  rejects(p, { ...ok, model: '' }, 'invalid_request', 'model', /non-empty string/);
  rejects(p, { ...ok, model: 3 }, 'invalid_request', 'model', /'model'/);
  rejects(p, { ...ok, model: 'm'.repeat(513) }, 'invalid_request', 'model', /at most 512 characters/);
  assert.equal(parseMessagesRequest(buf({ ...ok, model: 'm'.repeat(512) })).model.length, 512);
  rejects(p, { ...ok, max_tokens: undefined }, 'invalid_request', 'max_tokens', /'max_tokens' is required/);
  for (const mt of [0, -1, 1.5, '16', null]) rejects(p, { ...ok, max_tokens: mt }, 'invalid_request', 'max_tokens', /positive integer/);
  rejects(p, { ...ok, messages: undefined }, 'invalid_request', 'messages', /'messages'/);
  rejects(p, { ...ok, messages: { role: 'user' } }, 'invalid_request', 'messages', /array/);
  rejects(p, { ...ok, messages: [ok.messages[0], 'hi'] }, 'invalid_request', 'messages[1]', /must be an object/);
  for (const role of ['User', 'tool', 'developer', '', 7, undefined]) {
    rejects(p, { ...ok, messages: [ok.messages[0], { role, content: 'x' }] }, 'invalid_request', 'messages[1].role', /messages\[1\]\.role/);
  }
  for (const content of [undefined, null, 5, { type: 'text', text: 'x' }]) {
    rejects(p, { ...ok, messages: [{ role: 'user', content }] }, 'invalid_request', 'messages[0].content', /string or an array/);
  }
  rejects(p, { ...ok, messages: [{ role: 'user', content: [{ type: 'text', text: 'a' }, { text: 'b' }] }] }, 'invalid_request', 'messages[0].content[1]', /'type'/);
  rejects(p, { ...ok, messages: [{ role: 'user', content: ['b'] }] }, 'invalid_request', 'messages[0].content[0]', /content block/);
  rejects(p, { ...ok, messages: [{ role: 'system', content: [{ type: 'image', source: {} }] }] }, 'invalid_request', 'messages[0].content[0]', /text block/);
  for (const system of [5, { type: 'text', text: 'x' }, null]) rejects(p, { ...ok, system }, 'invalid_request', 'system', /'system'/);
  rejects(p, { ...ok, system: [{ type: 'text', text: 'a' }, { type: 'text' }] }, 'invalid_request', 'system[1]', /text block/);
  rejects(p, { ...ok, system: [{ type: 'image', text: 'a' }] }, 'invalid_request', 'system[0]', /text block/);
  for (const stream of ['true', 1, null]) rejects(p, { ...ok, stream }, 'invalid_request', 'stream', /boolean/);
});

test('count_tokens bodies need no max_tokens but get every other check', () => {
  const body = { model: 'claude', messages: [{ role: 'user', content: 'hi' }], tools: [] };
  assert.deepEqual(parseCountTokensRequest(buf(body)), body);
  const p = parseCountTokensRequest;
  rejects(p, '{', 'invalid_json', null, /JSON/);
  rejects(p, { messages: [] }, 'invalid_request', 'model', /'model'/);
  rejects(p, { model: 'm' }, 'invalid_request', 'messages', /'messages'/);
  rejects(p, { model: 'm', messages: [{ role: 'bot', content: 'x' }] }, 'invalid_request', 'messages[0].role', /role/);
  rejects(p, { model: 'm', messages: [], system: 1 }, 'invalid_request', 'system', /'system'/);
});

test('status maps to the Messages error types of the reference table (reference/ai-gateway.md §5.3)', () => {
  const table: Record<number, string> = {
    400: 'invalid_request_error', 401: 'authentication_error', 402: 'api_error', 403: 'permission_error',
    404: 'not_found_error', 405: 'api_error', 408: 'timeout_error', 409: 'api_error', 413: 'request_too_large',
    415: 'api_error', 422: 'invalid_request_error', 429: 'rate_limit_error', 500: 'api_error', 501: 'api_error',
    502: 'api_error', 503: 'overloaded_error', 504: 'api_error', 529: 'overloaded_error',
  };
  for (const [status, type] of Object.entries(table)) assert.equal(anthropicErrorType(Number(status)), type, `status ${status}`);
});

test('gateway errors render in the Messages envelope with the type of their status', () => {
  const expect: Partial<Record<ErrorCode, string>> = {
    missing_api_key: 'authentication_error',
    model_access_forbidden: 'permission_error',
    model_not_found: 'not_found_error',
    invalid_role: 'invalid_request_error',
    request_too_large: 'request_too_large',
    upstream_error: 'api_error',
    upstream_timeout: 'api_error',
    method_not_allowed: 'api_error',
    provider_unavailable: 'overloaded_error',
    overloaded: 'overloaded_error',
    shutting_down: 'overloaded_error',
    internal_error: 'api_error',
  };
  for (const [code, type] of Object.entries(expect)) {
    const body = anthropicErrorBody(new GatewayError(code as ErrorCode, 'boom'));
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, type, code);
  }
  for (const code of Object.keys(ERROR_CODES) as ErrorCode[]) {
    const body = anthropicErrorBody(new GatewayError(code, 'x'));
    assert.ok(/_error$|^request_too_large$/.test(body.error.type), `${code} → ${body.error.type}`);
  }
  // Internal messages are not exposed.
  assert.equal(anthropicErrorBody(new GatewayError('internal_error', 'db password is hunter2')).error.message, 'internal gateway error');
  assert.equal(anthropicErrorBody(new GatewayError('invalid_request', "'x' bad")).error.message, "'x' bad");
});

test('a type relayed from an Anthropic upstream is kept; other relayed types are not', () => {
  const overloaded = new GatewayError('upstream_error', 'Overloaded', { status: 502, type: 'overloaded_error' });
  assert.deepEqual(anthropicErrorBody(overloaded), { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
  // Statuses outside the reference table are api_error, so an Anthropic upstream's own type wins there.
  const billing = new GatewayError('upstream_error', 'credit balance too low', { status: 402, type: 'billing_error' });
  assert.equal(anthropicErrorBody(billing).error.type, 'billing_error');
  const timeout = new GatewayError('upstream_error', 'timed out', { status: 504, type: 'timeout_error' });
  assert.equal(anthropicErrorBody(timeout).error.type, 'timeout_error');
  const openai402 = new GatewayError('upstream_error', 'quota', { status: 402, type: 'insufficient_quota' });
  assert.equal(anthropicErrorBody(openai402).error.type, 'api_error');
  const rate = new GatewayError('upstream_error', 'slow down', { status: 429, type: 'rate_limit_error' });
  assert.equal(anthropicErrorBody(rate).error.type, 'rate_limit_error');
  const openaiType = new GatewayError('upstream_error', 'nope', { status: 400, type: 'server_error' });
  assert.equal(anthropicErrorBody(openaiType).error.type, 'invalid_request_error');
  // An OpenAI upstream's 401 says invalid_request_error: the status's own type wins.
  const openai401 = new GatewayError('upstream_error', 'Incorrect API key provided', { status: 401, type: 'invalid_request_error' });
  assert.equal(anthropicErrorBody(openai401).error.type, 'authentication_error');
});

test('the stream error frame is an SSE error event carrying the envelope', () => {
  const frame = anthropicStreamErrorFrame(new GatewayError('stream_aborted', 'upstream closed the stream'));
  assert.ok(frame.startsWith('event: error\ndata: '));
  assert.ok(frame.endsWith('\n\n'));
  assert.deepEqual(JSON.parse(frame.slice('event: error\ndata: '.length)), {
    type: 'error',
    error: { type: 'api_error', message: 'upstream closed the stream' },
  });
});

test('usage: cache reads and writes count as prompt tokens; details only for fields present', () => {
  assert.equal(anthropicUsageToCanonical(undefined), undefined);
  assert.deepEqual(anthropicUsageToCanonical({ input_tokens: 10, output_tokens: 5 }), {
    prompt_tokens: 10, completion_tokens: 5, total_tokens: 15,
  });
  assert.deepEqual(anthropicUsageToCanonical({ input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 100, cache_creation_input_tokens: 20 }), {
    prompt_tokens: 130, completion_tokens: 5, total_tokens: 135,
    prompt_tokens_details: { cached_tokens: 100, cache_creation_tokens: 20 },
  });
  assert.deepEqual(anthropicUsageToCanonical({ input_tokens: 1, cache_read_input_tokens: 4 }), {
    prompt_tokens: 5, completion_tokens: 0, total_tokens: 5, prompt_tokens_details: { cached_tokens: 4 },
  });
  assert.deepEqual(anthropicUsageToCanonical({ output_tokens: 3, cache_creation_input_tokens: 7 }), {
    prompt_tokens: 7, completion_tokens: 3, total_tokens: 10, prompt_tokens_details: { cache_creation_tokens: 7 },
  });
});

test('reads upstream Messages error bodies and tolerates other shapes', () => {
  assert.deepEqual(readAnthropicError('{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"r"}'), {
    type: 'overloaded_error', message: 'Overloaded',
  });
  assert.deepEqual(readAnthropicError('{"error":{"message":"m"}}'), { message: 'm' });
  assert.equal(readAnthropicError(''), undefined);
  assert.equal(readAnthropicError('<html>502</html>'), undefined);
  assert.equal(readAnthropicError('{"error":"text"}'), undefined);
  assert.equal(readAnthropicError('[1]'), undefined);
});

test('scans the top-level usage of a Messages response only', () => {
  const body = JSON.stringify({
    id: 'msg_1', type: 'message', content: [{ type: 'text', text: '"usage":{"input_tokens":999}' }],
    usage: { input_tokens: 3, output_tokens: 4, cache_read_input_tokens: 10, cache_creation_input_tokens: 0, service_tier: 'standard' },
  });
  assert.deepEqual(scanMessagesUsage(body), {
    prompt_tokens: 13, completion_tokens: 4, total_tokens: 17,
    prompt_tokens_details: { cached_tokens: 10, cache_creation_tokens: 0 },
  });
  assert.equal(scanMessagesUsage('{"id":"msg_1","usage":null}'), undefined);
  assert.equal(scanMessagesUsage('{"id":"msg_1"}'), undefined);
  assert.equal(scanMessagesUsage('not json'), undefined);
});
