import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorUnder2xx, hasNoChoices } from './answer-shape.ts';
import { openaiAdapter } from '../providers/openai/index.ts';

const classify = (b: string) => openaiAdapter.classifyError(502, b, {});

test('an error envelope under 2xx is the upstream error, key masked, status 502', () => {
  const e = errorUnder2xx(JSON.stringify({ error: { message: 'bad key sk-secret-12345678', type: 'insufficient_quota', code: 'insufficient_quota' } }), classify, 'sk-secret-12345678');
  assert.equal(e?.status, 502);
  assert.equal(e?.type, 'insufficient_quota');
  assert.equal(e?.publicCode, 'insufficient_quota');
  assert.equal(e?.message, 'bad key [REDACTED]');
  assert.equal(errorUnder2xx('{"error":"quota exceeded"}', classify, 'k')?.message, 'quota exceeded');
});

test('answers are not error envelopes, whatever else they carry', () => {
  for (const body of [
    '{"id":"x","choices":[{"index":0}]}',
    '{"id":"x","choices":[],"error":{"message":"m"}}',
    '{"type":"message","content":[],"error":{"message":"m"}}',
    '{"id":"x","error":null,"choices":[]}',
    '{"content":"the word \\"error\\" in text"}',
    'not json "error"',
  ]) assert.equal(errorUnder2xx(body, classify, 'k'), undefined, body);
});

test('a completion without choices', () => {
  assert.equal(hasNoChoices('{"choices":[]}'), true);
  assert.equal(hasNoChoices('{"choices": [ \n ]}'), true);
  assert.equal(hasNoChoices('{"choices":null}'), true);
  assert.equal(hasNoChoices('{"id":"x"}'), true);
  assert.equal(hasNoChoices('{"choices":[{"index":0}]}'), false);
  assert.equal(hasNoChoices('{"choices": [ {"index":0}]}'), false);
});
