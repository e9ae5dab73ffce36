import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findTopLevelMember, replaceTopLevelString, topLevelMembers } from './json-scan.ts';

test('finds a top-level member after nested values and tricky strings', () => {
  const s = '{"a":{"model":"inner"},"b":"x\\"model\\":\\"y","c":[1,{"model":2}],"model":"gpt-4o"}';
  const span = findTopLevelMember(s, 'model');
  assert.ok(span);
  assert.equal(s.slice(span.start, span.end), '"gpt-4o"');
});

test('replaces only the top-level string member, tolerating whitespace', () => {
  const s = '{ "id" : "c1", "model" : "gpt-4o-2024", "choices": [ { "delta": {"content": "\\"model\\": \\"z\\""} } ] }';
  const out = replaceTopLevelString(s, 'model', 'fast');
  assert.deepEqual(JSON.parse(out), { ...JSON.parse(s), model: 'fast' });
});

test('leaves text unchanged when the member is missing, not a string, or the JSON is malformed', () => {
  assert.equal(replaceTopLevelString('{"a":1}', 'model', 'x'), '{"a":1}');
  assert.equal(replaceTopLevelString('{"model":null}', 'model', 'x'), '{"model":null}');
  assert.equal(replaceTopLevelString('{"a":"unterminated', 'model', 'x'), '{"a":"unterminated');
  assert.equal(replaceTopLevelString('[1,2]', 'model', 'x'), '[1,2]');
});

test('finds object values such as usage', () => {
  const s = '{"id":"x","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}';
  const span = findTopLevelMember(s, 'usage');
  assert.ok(span);
  assert.deepEqual(JSON.parse(s.slice(span.start, span.end)), { prompt_tokens: 3, completion_tokens: 4 });
});

test('escapes the replacement value', () => {
  const out = replaceTopLevelString('{"model":"a"}', 'model', 'we"ird');
  assert.equal(JSON.parse(out).model, 'we"ird');
});

test('topLevelMembers reads members as JSON.parse does', () => {
  const s = ' {"a":1, "b":{"a":2}, "a":"last", "\\u0063":[1] }';
  const members = topLevelMembers(s);
  const value = (k: string) => {
    const span = members.get(k);
    return span === undefined ? undefined : JSON.parse(s.slice(span.start, span.end));
  };
  assert.deepEqual([...members.keys()], ['a', 'b', 'c']);
  assert.equal(value('a'), 'last');
  assert.deepEqual(value('b'), { a: 2 });
  assert.deepEqual(value('c'), [1]);
  assert.equal(topLevelMembers('[1]').size, 0);
  assert.deepEqual([...topLevelMembers('{"a":1,"b":').keys()], ['a'], 'members up to the first malformed one');
});

test('a string ends at the first quote no odd run of backslashes escapes, as JSON.parse reads it', () => {
  // Values whose JSON text holds quotes after runs of backslashes of either parity, and at the start.
  const values = ['plain', 'a"b', 'a\\', 'a\\\\', 'a\\"b', 'a\\\\"b', '\\"', '"', '\\\\\\', 'x\\\\\\"y"z', 'é\\"ü'];
  for (const v of values) {
    const s = `{"before":${JSON.stringify(v)},"key":"k","after":[${JSON.stringify(v)},{"v":${JSON.stringify(v)}}],"usage":1}`;
    assert.deepEqual(topLevelMembers(s).get('usage'), findTopLevelMember(s, 'usage'), v);
    const before = findTopLevelMember(s, 'before')!;
    assert.equal(JSON.parse(s.slice(before.start, before.end)), v, v);
    const after = findTopLevelMember(s, 'after')!;
    assert.deepEqual(JSON.parse(s.slice(after.start, after.end)), [v, { v }], v);
    assert.equal(s.slice(findTopLevelMember(s, 'usage')!.start), '1}', v);
  }
  // An escaped quote never closes the string; an unterminated one is no member.
  assert.equal(findTopLevelMember('{"a":"x\\"}', 'a'), undefined);
  assert.equal(findTopLevelMember('{"a":"x\\\\\\"}', 'a'), undefined);
  assert.deepEqual(findTopLevelMember('{"a":"x\\\\"}', 'a'), { start: 5, end: 10 });
});
