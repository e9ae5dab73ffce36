import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  REQUEST_JSON,
  REQUEST_SSE,
  RESPONSE_JSON,
  RESPONSE_SSE_EVENTS,
  SSE_TOTAL_EVENTS,
  checkReply,
  wantsStream,
} from './workload.ts';

test('bodies have the sizes the performance anchors were measured with', () => {
  assert.ok(Math.abs(REQUEST_JSON.length - 330) <= 15, `request is ${REQUEST_JSON.length} B`);
  assert.ok(Math.abs(RESPONSE_JSON.length - 665) <= 10, `response is ${RESPONSE_JSON.length} B`);
  assert.equal(RESPONSE_SSE_EVENTS.length, 26);
  assert.equal(JSON.parse(REQUEST_JSON).model, 'bench-model');
});

test('the streamed reply is 24 chunks, a usage chunk and [DONE]', () => {
  const events = RESPONSE_SSE_EVENTS.map((b) => b.toString());
  for (const e of events) assert.match(e, /^data: .*\n\n$/s);
  const chunks = events.slice(0, 24).map((e) => JSON.parse(e.slice(6)));
  assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk' && c.choices.length === 1));
  assert.equal(chunks[23].choices[0].finish_reason, 'stop');
  assert.equal(JSON.parse(events[24].slice(6)).usage.total_tokens, 83);
  assert.equal(events[25], 'data: [DONE]\n\n');
});

test('wantsStream tolerates whitespace and re-serialised bodies', () => {
  assert.equal(wantsStream(REQUEST_SSE), true);
  assert.equal(wantsStream(REQUEST_JSON), false);
  assert.equal(wantsStream('{"stream" : true}'), true);
  assert.equal(wantsStream('{"stream":false}'), false);
});

test('checkReply accepts the workload replies and names what is wrong otherwise', () => {
  assert.equal(checkReply(false, 200, RESPONSE_JSON.toString()), null);
  assert.equal(checkReply(true, 200, Buffer.concat(RESPONSE_SSE_EVENTS).toString()), null);
  assert.match(checkReply(false, 401, '{"error":{}}') ?? '', /status 401/);
  assert.match(checkReply(false, 200, '{"object":"list"}') ?? '', /object is list/);
  const short = Buffer.concat(RESPONSE_SSE_EVENTS.slice(1)).toString();
  assert.match(checkReply(true, 200, short) ?? '', new RegExp(`${SSE_TOTAL_EVENTS - 1} data events`));
});
