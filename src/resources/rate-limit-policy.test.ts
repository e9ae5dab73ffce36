import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { deriveId } from './ids.ts';
import { PK, assertErrors, expectOk, loadObj } from './test-helpers.ts';

const world = {
  provider_keys: [PK],
  models: [{ display_name: 'fast', provider: 'openai', provider_key: 'pk' }],
  api_keys: [{ display_name: 'team-a', key_hash: createHash('sha256').update('a').digest('hex'), allowed_models: [] }],
};
const load = (...rate_limit_policies: Record<string, unknown>[]) => loadObj({ ...world, rate_limit_policies });
const at = (i: number, name: string) => (e: string) => `rate_limit_policies[${i}] ("${name}")${e}`;

test('classic policies need scope, scope_ref, window and at least one cap', () => {
  expectOk(load({ name: 'p', scope: 'team_member', scope_ref: 't1', window: 'second', max_requests: 1, max_tokens: 2 }));
  assertErrors(load(
    { name: 'p', scope: 'team', scope_ref: 't1', window: 'day' },
    { name: 'q', scope: 'planet', window: 'week', max_requests: 0 },
  ), [
    at(0, 'p')(': needs max_requests, max_tokens or both'),
    at(1, 'q')('.scope_ref: required'),
    at(1, 'q')('.scope: must be one of: api_key, model, team, member, team_member'),
    at(1, 'q')('.window: must be one of: second, minute, hour, day'),
    at(1, 'q')('.max_requests: must be >= 1'),
  ]);
});

test('conditional policies: limits, condition tree, group_by, action, schedules', () => {
  const r = expectOk(load({
    name: 'c',
    limits: { rpm: 10, tpd: 1000 },
    conditions: {
      logic: 'and',
      children: [
        { dimension: 'model', operator: '==', value: 'fast' },
        { dimension: 'api_key', operator: 'in', value: ['team-a'] },
        { logic: 'or', negate: true, children: [{ dimension: 'provider', operator: '~*', value: '^open' }, { dimension: 'team', operator: '>=', value: '3' }] },
      ],
    },
    group_by: ['team', 'model'],
    schedules: [{ timezone: 'Europe/Berlin', start_time: '22:00', end_time: '06:00', days_of_week: ['sat', 'sun'] }],
  })).rate_limit_policies[0];
  assert.ok('limits' in r);
  assert.equal(r.action, 'reject');
  const children = r.conditions?.children ?? [];
  // Names on the api_key and model dimensions become ids.
  assert.equal(children[0].value, deriveId('models', 'fast'));
  assert.deepEqual(children[1].value, [deriveId('api_keys', 'team-a')]);
});

test('condition tree rules', () => {
  assertErrors(load({
    name: 'c',
    limits: {},
    conditions: {
      logic: 'and',
      children: [
        { dimension: 'model', operator: '==', value: 'ghost' },
        { dimension: 'team', operator: '~~', value: '(' },
        { dimension: 'team', operator: 'in', value: 'x' },
        { dimension: 'team', operator: '==', value: ['a'] },
        { dimension: 'team', operator: '>', value: 'lots' },
        { dimension: 'team', operator: 'ipmatch', value: ['10.0.0.0/8', 'nope'] },
        { dimension: 'team' },
        { logic: 'or' },
        { dimension: 'team', operator: '==', value: 'a', logic: 'and' },
        { dimension: 'colour', operator: '=', value: 'a' },
      ],
    },
  }), [
    at(0, 'c')('.conditions.children[0].value: unknown model "ghost"'),
    at(0, 'c')('.conditions.children[9].dimension: must be one of: team, member, api_key, model, model_name, provider'),
    at(0, 'c')('.conditions.children[9].operator: must be one of: ==, ~=, ~~, ~*, in, has, >, >=, <, <=, ipmatch'),
    at(0, 'c')('.limits: must set at least one limit'),
    at(0, 'c')('.conditions.children[1].value: invalid regular expression: /(/u: Unterminated group'),
    at(0, 'c')('.conditions.children[2].value: must be a list for operator "in"'),
    at(0, 'c')('.conditions.children[3].value: must be a string for operator "=="'),
    at(0, 'c')('.conditions.children[4].value: must be a number for operator ">"'),
    at(0, 'c')('.conditions.children[5].value: must be a CIDR (e.g. 10.0.0.0/8) or an IP address, IPv4 as four decimal parts without leading zeros'),
    at(0, 'c')('.conditions.children[6].operator: required in a condition leaf'),
    at(0, 'c')('.conditions.children[6].value: required in a condition leaf'),
    at(0, 'c')('.conditions.children[7].children: required in a condition group'),
    at(0, 'c')('.conditions.children[8]: a condition is either a leaf (dimension, operator, value) or a group (logic, children), not both'),
  ]);
});

test('condition trees are bounded in depth and leaves', () => {
  let deep: Record<string, unknown> = { dimension: 'team', operator: '==', value: 'a' };
  for (let i = 0; i < 9; i++) deep = { logic: 'and', children: [deep] };
  assertErrors(load({ name: 'd', limits: { rpm: 1 }, conditions: deep }), [
    at(0, 'd')('.conditions.children[0].children[0].children[0].children[0].children[0].children[0].children[0].children[0]: condition tree is deeper than 8 levels'),
  ]);
  const wide = { logic: 'or', children: Array.from({ length: 65 }, () => ({ dimension: 'team', operator: '==', value: 'a' })) };
  assertErrors(load({ name: 'w', limits: { rpm: 1 }, conditions: wide }), [
    at(0, 'w')('.conditions.children[64]: condition tree has more than 64 leaves'),
  ]);
});

test('schedule rules', () => {
  assertErrors(load({
    name: 's',
    limits: { rpm: 1 },
    group_by: ['team', 'team'],
    schedules: [
      { timezone: 'Mars/Olympus', start_time: '25:00', end_time: '24:00' },
      { timezone: 'UTC', start_time: '09:00', end_time: '09:00', days_of_week: ['mon'], dates: ['2026-01-01'] },
      { timezone: 'UTC', start_time: '09:00', end_time: '17:00', days_of_week: ['monday'], dates: ['01/01/2026'] },
    ],
  }), [
    at(0, 's')('.schedules[0].start_time: must be a time HH:MM (24-hour)'),
    at(0, 's')('.schedules[2].days_of_week[0]: must be one of: mon, tue, wed, thu, fri, sat, sun'),
    at(0, 's')('.schedules[2].dates[0]: must be a date (YYYY-MM-DD)'),
    at(0, 's')('.schedules[0].timezone: unknown time zone "Mars/Olympus"'),
    at(0, 's')('.schedules[1]: use days_of_week or dates, not both'),
    at(0, 's')('.schedules[1].end_time: must differ from start_time'),
    at(0, 's')('.schedules[2]: use days_of_week or dates, not both'),
    at(0, 's')('.group_by: lists a dimension twice'),
  ]);
});

test('fields of one form are not accepted in the other', () => {
  assertErrors(load({ name: 'x', limits: { rpm: 1 }, scope: 'team', window: 'day' }), [
    at(0, 'x')('.scope: unknown field'),
    at(0, 'x')('.window: unknown field'),
  ]);
});
