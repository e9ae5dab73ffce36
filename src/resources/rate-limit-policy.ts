// Rate-limit policy: a named limit applied on top of per-key and per-model limits. Two forms:
// classic (one scope, one window, request and/or token caps) and conditional (RateLimit
// caps applied to traffic matching a condition tree, optionally grouped and scheduled).

import { Type, type Static } from '@sinclair/typebox';
import { Closed, NonEmptyString, RateLimitSchema, StringEnum, cidrError, regexError } from './common.ts';
import type { FieldPath, Report } from './issues.ts';

export const POLICY_SCOPES = ['api_key', 'model', 'team', 'member', 'team_member'] as const;
export const POLICY_WINDOWS = ['second', 'minute', 'hour', 'day'] as const;
export const CONDITION_DIMENSIONS = ['team', 'member', 'api_key', 'model', 'model_name', 'provider'] as const;
export const CONDITION_OPERATORS = ['==', '~=', '~~', '~*', 'in', 'has', '>', '>=', '<', '<=', 'ipmatch'] as const;
export const GROUP_BY_DIMENSIONS = ['team', 'member', 'api_key', 'model', 'provider'] as const;
export const DAYS_OF_WEEK = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;

/** Limits on a condition tree, so a policy stays cheap to evaluate per request. */
export const MAX_CONDITION_DEPTH = 8;
export const MAX_CONDITION_LEAVES = 64;

export const ClassicRateLimitPolicySchema = Closed(
  {
    name: NonEmptyString({ description: 'identity' }),
    scope: StringEnum(POLICY_SCOPES),
    scope_ref: NonEmptyString({ description: 'id of the scoped API key/model (in a file: its name), or a team/member id' }),
    window: StringEnum(POLICY_WINDOWS),
    max_requests: Type.Optional(Type.Integer({ minimum: 1 })),
    max_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { title: 'classic rate limit policy' },
);

/**
 * A node of the condition tree: a leaf {dimension, operator, value, negate?} or a group
 * {logic, children, negate?}. One object shape keeps validation errors on the exact field;
 * which fields a node needs is checked in code.
 */
export const ConditionSchema = Type.Recursive((This) => Closed({
  dimension: Type.Optional(StringEnum(CONDITION_DIMENSIONS)),
  operator: Type.Optional(StringEnum(CONDITION_OPERATORS)),
  value: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())])),
  logic: Type.Optional(StringEnum(['and', 'or'])),
  children: Type.Optional(Type.Array(This, { minItems: 1 })),
  negate: Type.Optional(Type.Boolean({ default: false })),
}), { $id: 'RateLimitCondition', description: 'leaf {dimension, operator, value} or group {logic, children}' });

export const ScheduleSchema = Closed({
  timezone: NonEmptyString({ description: 'IANA time zone, e.g. Europe/Berlin' }),
  start_time: Type.String({ pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$' }),
  end_time: Type.String({ pattern: '^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$' }),
  days_of_week: Type.Optional(Type.Array(StringEnum(DAYS_OF_WEEK), { minItems: 1 })),
  dates: Type.Optional(Type.Array(Type.String({ format: 'date' }), { minItems: 1 })),
});

export const ConditionalRateLimitPolicySchema = Closed(
  {
    name: NonEmptyString({ description: 'identity' }),
    limits: RateLimitSchema,
    conditions: Type.Optional(ConditionSchema),
    group_by: Type.Optional(Type.Array(StringEnum(GROUP_BY_DIMENSIONS), { minItems: 1 })),
    action: Type.Optional(StringEnum(['reject'], { default: 'reject' })),
    schedules: Type.Optional(Type.Array(ScheduleSchema, { minItems: 1, description: 'enforcement is suspended inside these periods' })),
  },
  { title: 'conditional rate limit policy' },
);

export const RateLimitPolicySchema = Type.Union([ClassicRateLimitPolicySchema, ConditionalRateLimitPolicySchema], {
  title: 'rate_limit_policy',
  description: 'classic (scope/window/max_*) or conditional (limits + conditions)',
});

export type ClassicRateLimitPolicyDoc = Static<typeof ClassicRateLimitPolicySchema>;
export type ConditionalRateLimitPolicyDoc = Static<typeof ConditionalRateLimitPolicySchema>;
export type RateLimitPolicyDoc = ClassicRateLimitPolicyDoc | ConditionalRateLimitPolicyDoc;
export type Condition = Static<typeof ConditionSchema>;

function isConditionalPolicy(doc: RateLimitPolicyDoc): doc is ConditionalRateLimitPolicyDoc {
  return 'limits' in doc;
}

function checkCondition(node: Condition, path: FieldPath, depth: number, leaves: { n: number }, report: Report): void {
  if (depth > MAX_CONDITION_DEPTH) {
    report(path, `condition tree is deeper than ${MAX_CONDITION_DEPTH} levels`);
    return;
  }
  const isGroup = node.logic !== undefined || node.children !== undefined;
  const isLeaf = node.dimension !== undefined || node.operator !== undefined || node.value !== undefined;
  if (isGroup && isLeaf) {
    report(path, 'a condition is either a leaf (dimension, operator, value) or a group (logic, children), not both');
    return;
  }
  if (isGroup) {
    if (node.logic === undefined) report([...path, 'logic'], 'required in a condition group (and | or)');
    if (node.children === undefined) report([...path, 'children'], 'required in a condition group');
    (node.children ?? []).forEach((child, i) => checkCondition(child, [...path, 'children', i], depth + 1, leaves, report));
    return;
  }
  for (const f of ['dimension', 'operator', 'value'] as const) {
    if (node[f] === undefined) report([...path, f], 'required in a condition leaf');
  }
  leaves.n++;
  if (leaves.n === MAX_CONDITION_LEAVES + 1) report(path, `condition tree has more than ${MAX_CONDITION_LEAVES} leaves`);
  const { operator, value } = node;
  if (operator === undefined || value === undefined) return;
  const vpath = [...path, 'value'];
  const values = Array.isArray(value) ? value : [value];
  if (operator === 'in' && !Array.isArray(value)) report(vpath, 'must be a list for operator "in"');
  if (operator !== 'in' && operator !== 'ipmatch' && Array.isArray(value)) report(vpath, `must be a string for operator "${operator}"`);
  if (operator === '~~' || operator === '~*') {
    values.forEach((v) => {
      // Compiled as the limiter compiles it: `~*` adds the `i` flag.
      const e = regexError(v, operator === '~*' ? 'i' : '');
      if (e) report(vpath, e);
    });
  }
  if (['>', '>=', '<', '<='].includes(operator)) {
    values.forEach((v) => {
      if (v.trim() === '' || !Number.isFinite(Number(v))) report(vpath, `must be a number for operator "${operator}"`);
    });
  }
  if (operator === 'ipmatch') {
    values.forEach((v) => {
      const e = cidrError(v);
      if (e) report(vpath, e);
    });
  }
}

function timezoneError(tz: string): string | null {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return null;
  } catch {
    return `unknown time zone "${tz}"`;
  }
}

/** Checks JSON Schema cannot express. */
export function checkRateLimitPolicy(doc: RateLimitPolicyDoc, report: Report): void {
  if (!isConditionalPolicy(doc)) {
    if (doc.max_requests === undefined && doc.max_tokens === undefined) {
      report([], 'needs max_requests, max_tokens or both');
    }
    return;
  }
  if (Object.keys(doc.limits).length === 0) report(['limits'], 'must set at least one limit');
  if (doc.conditions) checkCondition(doc.conditions, ['conditions'], 1, { n: 0 }, report);
  (doc.schedules ?? []).forEach((s, i) => {
    const e = timezoneError(s.timezone);
    if (e) report(['schedules', i, 'timezone'], e);
    if (s.days_of_week && s.dates) report(['schedules', i], 'use days_of_week or dates, not both');
    // end_time before start_time spans midnight; equal times would be an empty period.
    if (s.end_time === s.start_time) report(['schedules', i, 'end_time'], 'must differ from start_time');
  });
  if (doc.group_by && new Set(doc.group_by).size !== doc.group_by.length) report(['group_by'], 'lists a dimension twice');
}
