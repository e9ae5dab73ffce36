import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SseFrameTooLarge, SseLineSplitter } from './sse-lines.ts';

const stream = 'data: {"a":"héllo"}\n\nevent: x\r\ndata: 2\r\n\r\ndata: [DONE]\n\n';
const expected = ['data: {"a":"héllo"}', '', 'event: x', 'data: 2', '', 'data: [DONE]', ''];

test('yields the same lines whatever the chunk boundaries, multi-byte characters included', () => {
  const bytes = Buffer.from(stream);
  for (let cut = 1; cut < bytes.length; cut++) {
    const lines: string[] = [];
    const s = new SseLineSplitter();
    s.push(bytes.subarray(0, cut), (l) => lines.push(l));
    s.push(bytes.subarray(cut), (l) => lines.push(l));
    assert.deepEqual(lines, expected, `cut at ${cut}`);
    assert.equal(s.flush(), '');
  }
});

test('byte-at-a-time delivery gives the same lines', () => {
  const bytes = Buffer.from(stream);
  const lines: string[] = [];
  const s = new SseLineSplitter();
  for (const b of bytes) s.push(Buffer.from([b]), (l) => lines.push(l));
  assert.deepEqual(lines, expected);
});

test('an unterminated frame over the cap fails', () => {
  const s = new SseLineSplitter(64);
  assert.throws(() => s.push('data: ' + 'x'.repeat(100), () => {}), SseFrameTooLarge);
});

test('a frame of many terminated lines over the cap fails too', () => {
  const s = new SseLineSplitter(64);
  assert.throws(() => {
    for (let i = 0; i < 10; i++) s.push('data: ' + 'y'.repeat(10) + '\n', () => {});
  }, SseFrameTooLarge);
});

test('flush returns an unterminated tail', () => {
  const s = new SseLineSplitter();
  s.push('data: partial', () => assert.fail('no complete line'));
  assert.equal(s.flush(), 'data: partial');
});
