import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertErrors, expectOk, loadObj } from './test-helpers.ts';
import { GUARDRAIL_KINDS } from './guardrail.ts';

const load = (...guardrails: Record<string, unknown>[]) => loadObj({ guardrails });

test('keyword guardrail with defaults', () => {
  const g = expectOk(load({ name: 'k', kind: 'keyword', patterns: [{ kind: 'literal', value: 'x' }, { kind: 'regex', value: '(?i)project\\s+falcon' }] })).guardrails[0];
  assert.deepEqual(g, {
    id: g.id, name: 'k', kind: 'keyword', enabled: true, hook_point: 'both', enforcement_mode: 'block', mandatory: false, direction: 'both',
    patterns: [{ kind: 'literal', value: 'x' }, { kind: 'regex', value: '(?i)project\\s+falcon' }],
  });
});

test('keyword: regexes must compile; pattern kinds are literal or regex; remote knobs are rejected', () => {
  assertErrors(load({ name: 'k', kind: 'keyword', fail_open: true, patterns: [{ kind: 'regex', value: '(' }, { kind: 'glob', value: 'a' }, { kind: 'literal', value: '' }] }), [
    'guardrails[0] ("k").fail_open: not allowed on a keyword guardrail (it runs locally)',
    'guardrails[0] ("k").patterns[1].kind: must be one of: literal, regex',
    'guardrails[0] ("k").patterns[2].value: must not be empty',
    'guardrails[0] ("k").patterns[0].value: invalid regular expression: /(/u: Unterminated group',
  ]);
});

test('pii guardrail with defaults; detector and pattern rules', () => {
  const g = expectOk(load({ name: 'p', kind: 'pii', detectors: [{ type: 'email' }, { type: 'bank_card', action: 'block' }], custom_patterns: [{ name: 'emp_id', regex: 'E\\d{6}' }] })).guardrails[0];
  assert.ok(g.kind === 'pii');
  assert.equal(g.default_action, 'mask');
  assert.equal(g.max_buffer_bytes, 262144);
  assert.equal(g.on_buffer_exceeded, 'fail_closed');
  assertErrors(load({
    name: 'p', kind: 'pii',
    detectors: [{ type: 'email' }, { type: 'email' }, { type: 'passport' }],
    custom_patterns: [{ name: 'x'.repeat(65), regex: 'a' }, { name: 'a', regex: '[' }, { name: 'A', regex: 'b', replacement: 'r'.repeat(257) }],
    default_action: 'drop',
    max_buffer_bytes: 0,
  }), [
    'guardrails[0] ("p").detectors[2].type: must be one of: email, china_mobile, china_id_card, bank_card, us_ssn, ip_address, api_key, jwt, private_key',
    'guardrails[0] ("p").custom_patterns[0].name: must be at most 64 characters',
    'guardrails[0] ("p").custom_patterns[2].replacement: must be at most 256 characters',
    'guardrails[0] ("p").default_action: must be one of: mask, block',
    'guardrails[0] ("p").max_buffer_bytes: must be >= 1',
    'guardrails[0] ("p").detectors[1].type: duplicate detector "email" (also detectors[0])',
    'guardrails[0] ("p").custom_patterns[1].regex: invalid regular expression: /[/u: Unterminated character class',
    'guardrails[0] ("p").custom_patterns[2].name: duplicate name "A" (also custom_patterns[1])',
  ]);
});

test('every remote kind loads with its common knobs and defaults', () => {
  const remote = GUARDRAIL_KINDS.filter((k) => k !== 'keyword' && k !== 'pii');
  const r = expectOk(load(...remote.map((kind) => ({ name: kind, kind, endpoint: 'https://mod.example.com', api_key: 'k', settings: { threshold: 0.5 } }))));
  for (const g of r.guardrails) {
    assert.ok('fail_open' in g && g.fail_open === true);
    assert.ok('timeout_ms' in g && g.timeout_ms === 5000);
    assert.ok('output_fail_open' in g && g.output_fail_open === false);
  }
  const azure = r.guardrails.find((g) => g.kind === 'azure_content_safety_text_moderation');
  const aliyun = r.guardrails.find((g) => g.kind === 'aliyun_text_moderation');
  assert.ok(azure && 'window_size' in azure && azure.window_size === 10000 && azure.stream_processing_mode === 'window');
  assert.ok(aliyun && 'window_size' in aliyun && aliyun.window_size === 2000 && aliyun.window_overlap_size === 256);
});

test('remote rules: window knobs only on text-moderation kinds; overlap < window', () => {
  assertErrors(load(
    { name: 'l', kind: 'lakera', window_size: 10, timeout_ms: 0 },
    { name: 'a', kind: 'aliyun_ai_guardrail', window_size: 100, window_overlap_size: 100, stream_processing_mode: 'stream' },
  ), [
    'guardrails[0] ("l").window_size: unknown field',
    'guardrails[0] ("l").timeout_ms: must be >= 1',
    'guardrails[1] ("a").stream_processing_mode: must be one of: window, buffer_full',
    'guardrails[1] ("a").window_overlap_size: must be smaller than window_size',
  ]);
});

test('kind is required and must be known; common fields are checked', () => {
  assertErrors(load({ name: 'a' }, { name: 'b', kind: 'magic' }, { name: 'c', kind: 'keyword', hook_point: 'middle', created_at: 'yesterday' }), [
    'guardrails[0] ("a").kind: required (one of: keyword, pii, lakera, openai_moderation, presidio, bedrock, azure_content_safety, semantic, azure_content_safety_text_moderation, aliyun_text_moderation, aliyun_ai_guardrail)',
    'guardrails[1] ("b").kind: must be one of: keyword, pii, lakera, openai_moderation, presidio, bedrock, azure_content_safety, semantic, azure_content_safety_text_moderation, aliyun_text_moderation, aliyun_ai_guardrail',
    'guardrails[2] ("c").hook_point: must be one of: both, input, output',
    'guardrails[2] ("c").created_at: must be an RFC 3339 date-time with a time zone (e.g. 2026-01-31T00:00:00Z)',
  ]);
});
