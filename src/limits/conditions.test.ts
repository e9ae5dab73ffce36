import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileCondition, type RequestAttributes } from './conditions.ts';
import { inSchedule, compileSchedules } from './schedules.ts';
import type { Condition } from '../resources/types.ts';

const attrs: RequestAttributes = { team: 'gold', member: 'u-7', api_key: 'key-1', model: 'model-1', model_name: 'gpt-4o', provider: 'openai' };
const leaf = (dimension: string, operator: string, value: string | string[], negate = false) => ({ dimension, operator, value, negate }) as Condition;
const matches = (c: Condition, a: RequestAttributes = attrs) => compileCondition(c)(a);

test('leaf operators', () => {
  assert.equal(matches(leaf('team', '==', 'gold')), true);
  assert.equal(matches(leaf('team', '==', 'silver')), false);
  assert.equal(matches(leaf('team', '~=', 'silver')), true);
  assert.equal(matches(leaf('model_name', '~~', '^gpt-4')), true);
  assert.equal(matches(leaf('model_name', '~~', '^GPT-4')), false);
  assert.equal(matches(leaf('model_name', '~*', '^GPT-4')), true);
  assert.equal(matches(leaf('model_name', '~*', '(?i)^GPT-4')), true, '(?i) under ~* is the same flag, not a second one');
  assert.equal(matches(leaf('provider', 'in', ['anthropic', 'openai'])), true);
  assert.equal(matches(leaf('provider', 'in', ['anthropic'])), false);
  assert.equal(matches(leaf('model_name', 'has', '4o')), true);
  assert.equal(matches(leaf('member', '>', '5'), { ...attrs, member: '7' }), true);
  assert.equal(matches(leaf('member', '<=', '5'), { ...attrs, member: '7' }), false);
  assert.equal(matches(leaf('member', '>', '5')), false, 'a non-number never compares');
  assert.equal(matches(leaf('member', 'ipmatch', ['10.0.0.0/8']), { ...attrs, member: '10.1.2.3' }), true);
  assert.equal(matches(leaf('member', 'ipmatch', ['10.0.0.0/8']), { ...attrs, member: '11.1.2.3' }), false);
});

test('negate, groups, and absent attributes', () => {
  assert.equal(matches(leaf('team', '==', 'gold', true)), false);
  const tree = { logic: 'or', children: [leaf('team', '==', 'x'), { logic: 'and', children: [leaf('provider', '==', 'openai'), leaf('model', '==', 'model-1')] }] } as Condition;
  assert.equal(matches(tree), true);
  assert.equal(matches({ ...tree, negate: true } as Condition), false);
  assert.equal(matches({ logic: 'and', children: [leaf('team', '==', 'gold'), leaf('team', '==', 'x')] } as Condition), false);
  // A key without a team matches no team leaf; negated, it does.
  assert.equal(matches(leaf('team', '~=', 'gold'), { ...attrs, team: undefined }), false);
  assert.equal(matches(leaf('team', '==', 'gold', true), { ...attrs, team: undefined }), true);
  assert.equal(compileCondition(undefined)(attrs), true);
});

test('schedules: weekdays, dates, periods across midnight, time zones', () => {
  const thu0830z = Date.parse('2025-10-09T08:30:00Z'); // Thursday
  assert.equal(inSchedule({ timezone: 'UTC', start_time: '08:00', end_time: '09:00' }, thu0830z), true);
  assert.equal(inSchedule({ timezone: 'UTC', start_time: '08:00', end_time: '08:30' }, thu0830z), false, 'end is exclusive');
  assert.equal(inSchedule({ timezone: 'UTC', start_time: '08:00', end_time: '09:00', days_of_week: ['fri'] }, thu0830z), false);
  assert.equal(inSchedule({ timezone: 'UTC', start_time: '08:00', end_time: '09:00', dates: ['2025-10-09'] }, thu0830z), true);
  // 08:30Z is 10:30 in Berlin (CEST).
  assert.equal(inSchedule({ timezone: 'Europe/Berlin', start_time: '10:00', end_time: '11:00' }, thu0830z), true);
  assert.equal(inSchedule({ timezone: 'Europe/Berlin', start_time: '08:00', end_time: '09:00' }, thu0830z), false);
  // 22:00-06:00 on Wednesdays covers Thursday 05:00 (the tail belongs to Wednesday), not Thursday 23:00.
  const night = { timezone: 'UTC', start_time: '22:00', end_time: '06:00', days_of_week: ['wed' as const] };
  assert.equal(inSchedule(night, Date.parse('2025-10-09T05:00:00Z')), true);
  assert.equal(inSchedule(night, Date.parse('2025-10-08T23:00:00Z')), true);
  assert.equal(inSchedule(night, Date.parse('2025-10-09T23:00:00Z')), false);
  assert.equal(inSchedule({ timezone: 'UTC', start_time: '23:00', end_time: '24:00' }, Date.parse('2025-10-09T23:59:00Z')), true);
  assert.equal(compileSchedules(undefined), undefined);
  assert.equal(compileSchedules([{ timezone: 'UTC', start_time: '08:00', end_time: '09:00' }])?.(thu0830z), true);
});
