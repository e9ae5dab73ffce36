import { describe, it, test } from 'node:test';
import assert from 'node:assert/strict';
import { SseEventAssembler, SseFrameTooLarge, SseLineSplitter } from './sse-lines.ts';

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

describe('SseEventAssembler', () => {
  const assemble = (text: string) => {
    const split = new SseLineSplitter();
    const asm = new SseEventAssembler();
    const out: Array<{ event: string | undefined; data: string }> = [];
    split.push(text, (l) => {
      const e = asm.line(l);
      if (e !== undefined) out.push(e);
    });
    const rest = split.flush();
    if (rest.length > 0) {
      const e = asm.line(rest);
      if (e !== undefined) out.push(e);
    }
    const last = asm.end();
    if (last !== undefined) out.push(last);
    return out;
  };

  it('pairs event names with data and joins multi-line data', () => {
    assert.deepEqual(assemble('event: message_start\ndata: {"a":1}\n\ndata: x\ndata:y\n\n'), [
      { event: 'message_start', data: '{"a":1}' },
      { event: undefined, data: 'x\ny' },
    ]);
  });

  it('ignores comments and unknown fields, drops data-less frames, resets the event name', () => {
    assert.deepEqual(assemble(': ping\n\nevent: ping\n\nid: 3\nretry: 10\ndata: z\n\n'), [{ event: undefined, data: 'z' }]);
  });

  it('dispatches an unterminated last frame at end of stream', () => {
    assert.deepEqual(assemble('event: message_stop\ndata: {}'), [{ event: 'message_stop', data: '{}' }]);
  });
});
