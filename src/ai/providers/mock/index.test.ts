import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mockAdapter } from './index.ts';

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
