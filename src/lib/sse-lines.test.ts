import { describe, it, test } from 'node:test';
import assert from 'node:assert/strict';
import { SseEventAssembler, SseFrameTooLarge, SseLineSplitter, type SseFrame } from './sse-lines.ts';

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

test('a line spread over three chunks, terminators split included, gives the same lines', () => {
  const bytes = Buffer.from(stream);
  for (let a = 1; a < bytes.length; a++) {
    for (let b = a; b < bytes.length; b++) {
      const lines: string[] = [];
      const s = new SseLineSplitter();
      for (const part of [bytes.subarray(0, a), bytes.subarray(a, b), bytes.subarray(b)]) s.push(part, (l) => lines.push(l));
      assert.deepEqual(lines, expected, `cuts at ${a}, ${b}`);
    }
  }
});

test('a lone \\r at the end of a chunk ends its line; a \\n opening the next chunk is part of it', () => {
  const lines: string[] = [];
  const s = new SseLineSplitter();
  for (const part of ['data: a', 'b\r', '\ndata: c\r', '\r', 'data: d\r']) s.push(part, (l) => lines.push(l));
  assert.deepEqual(lines, ['data: ab', 'data: c', '']);
  // Held until the end of the stream, which no \n can follow: the \r ended the line.
  assert.equal(s.flush(), 'data: d');
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

test('an unterminated line growing over several chunks fails at the chunk that crosses the cap', () => {
  const s = new SseLineSplitter(64);
  for (let i = 0; i < 6; i++) s.push('x'.repeat(10), () => assert.fail('no complete line'));
  s.push('xxxx', () => {}); // 64: at the cap, not over it
  assert.throws(() => s.push('x', () => {}), SseFrameTooLarge);
});

test('flush returns an unterminated tail', () => {
  const s = new SseLineSplitter();
  s.push('data: partial', () => assert.fail('no complete line'));
  assert.equal(s.flush(), 'data: partial');
});

/** Thrown by the instrument of countCharactersSearched once past its budget. */
class OverBudget extends Error {}

/**
 * How many characters `fn` looks at through String.prototype.indexOf and charCodeAt (the
 * methods the splitter searches with), or Infinity once that passes `budget`: the instrument
 * throws then, so a splitter that does far too much work fails at once instead of running on.
 * Deterministic: it counts work, not time.
 */
function countCharactersSearched(budget: number, fn: () => void): number {
  const proto = String.prototype;
  const { indexOf, charCodeAt } = proto;
  let count = 0;
  const add = (n: number): void => {
    count += n;
    if (count > budget) throw new OverBudget();
  };
  proto.indexOf = function (this: string, search: string, position?: number): number {
    const from = Math.max(0, position ?? 0);
    const at = indexOf.call(this, search, from);
    add((at < 0 ? this.length : at + search.length) - from);
    return at;
  };
  proto.charCodeAt = function (this: string, index: number): number {
    add(1);
    return charCodeAt.call(this, index);
  };
  try {
    fn();
  } catch (err) {
    if (err instanceof OverBudget) return Infinity;
    throw err;
  } finally {
    proto.indexOf = indexOf;
    proto.charCodeAt = charCodeAt;
  }
  return count;
}

test('the work is linear in the bytes: a line of almost 16 MiB in 64 KiB chunks, then an ordinary event', () => {
  const line = `data: "${'a'.repeat(16 * 1024 * 1024 - 1024)}"`;
  const bytes = Buffer.from(`${line}\n\ndata: {"ok":1}\n\n`);
  const split = new SseLineSplitter();
  const asm = new SseEventAssembler();
  const frames: SseFrame[] = [];
  const searched = countCharactersSearched(4 * bytes.length, () => {
    for (let at = 0; at < bytes.length; at += 64 * 1024) {
      split.push(bytes.subarray(at, at + 64 * 1024), (l) => {
        const f = asm.line(l);
        if (f !== undefined) frames.push(f);
      });
    }
  });
  // Rescanning the pending line on every chunk looks at ~128 times the bytes here.
  assert.ok(searched <= 4 * bytes.length, `searched ${searched} characters for ${bytes.length} bytes`);
  // The instrument must see the search at all, or the bound above says nothing.
  assert.ok(searched >= bytes.length, `searched ${searched} characters for ${bytes.length} bytes: not through indexOf/charCodeAt?`);
  assert.equal(frames.length, 2);
  assert.equal(frames[0].data, line.slice(6));
  assert.deepEqual(frames[1], { event: undefined, data: '{"ok":1}' });
  assert.equal(split.flush(), '');
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
