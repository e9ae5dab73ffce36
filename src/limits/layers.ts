// Which limits apply to a request: the API key's inline `rate_limit`, the model's inline
// `rate_limit` (a model group's own, not its members'), and every matching rate-limit policy,
// all AND-ed. Policies are indexed once per snapshot (classic ones by scope and scope_ref,
// conditional ones with their condition tree and schedules compiled), so the hot path only does
// Map lookups and runs precompiled closures.
import type { ApiKeyEntry, ModelEntry, Snapshot } from '../snapshot/snapshot.ts';
import type { RateLimitPolicy } from '../resources/types.ts';
import { compileCondition, type Matcher, type RequestAttributes } from './conditions.ts';
import { compileSchedules } from './schedules.ts';
import { limitsOf, POLICY_WINDOW_SECS, type LayerLimits, type WindowLimit } from './windows.ts';

/** Label of the layer that holds a limit (metric `layer`). */
export type LayerKind = 'api_key' | 'model' | 'policy';

export interface Layer {
  /** Store key stem: unique per bucket (per policy and group-by value). */
  readonly bucket: string;
  readonly layer: LayerKind;
  /** api_key, model, team, member, team_member, or conditional (metric `scope`). */
  readonly scope: string;
  readonly policy: { readonly id: string; readonly name: string } | undefined;
  readonly limits: LayerLimits;
}

interface ClassicPolicy {
  readonly id: string;
  readonly name: string;
  readonly scope: string;
  readonly limits: LayerLimits;
}

interface ConditionalPolicy {
  readonly id: string;
  readonly name: string;
  readonly matches: Matcher;
  readonly groupBy: readonly (keyof RequestAttributes)[] | undefined;
  readonly suspended: ((nowMs: number) => boolean) | undefined;
  readonly limits: LayerLimits;
}

interface CompiledPolicies {
  /** Classic policies by `${scope}\0${scope_ref}`. */
  readonly classic: ReadonlyMap<string, readonly ClassicPolicy[]>;
  readonly conditional: readonly ConditionalPolicy[];
}

const compiled = new WeakMap<Snapshot, CompiledPolicies>();

function classicLimits(p: Extract<RateLimitPolicy, { window: string }>): LayerLimits {
  const windowSecs = POLICY_WINDOW_SECS[p.window];
  const windows: WindowLimit[] = [];
  if (p.max_requests !== undefined) windows.push({ kind: 'requests', windowSecs, max: p.max_requests });
  if (p.max_tokens !== undefined) windows.push({ kind: 'tokens', windowSecs, max: p.max_tokens });
  return { windows, concurrency: undefined };
}

export function compilePolicies(policies: readonly RateLimitPolicy[]): CompiledPolicies {
  const classic = new Map<string, ClassicPolicy[]>();
  const conditional: ConditionalPolicy[] = [];
  for (const p of policies) {
    // A conditional policy is the one with `limits` (the serving process never loads resources/'s schema modules).
    if ('limits' in p) {
      const limits = limitsOf(p.limits);
      if (limits === undefined) continue;
      conditional.push({
        id: p.id,
        name: p.name,
        matches: compileCondition(p.conditions),
        groupBy: p.group_by as (keyof RequestAttributes)[] | undefined,
        suspended: compileSchedules(p.schedules),
        limits,
      });
      continue;
    }
    const c = p as Extract<RateLimitPolicy, { window: string }>;
    const k = `${c.scope}\u0000${c.scope_ref}`;
    let list = classic.get(k);
    if (list === undefined) classic.set(k, (list = []));
    list.push({ id: c.id, name: c.name, scope: c.scope, limits: classicLimits(c) });
  }
  return { classic, conditional };
}

function policiesOf(snapshot: Snapshot): CompiledPolicies {
  let c = compiled.get(snapshot);
  if (c === undefined) {
    c = compilePolicies(snapshot.resources.rate_limit_policies);
    compiled.set(snapshot, c);
  }
  return c;
}

export function attributesOf(key: ApiKeyEntry, model: ModelEntry | undefined): RequestAttributes {
  return {
    team: key.doc.team_id,
    member: key.doc.user_id,
    api_key: key.id,
    model: model?.id,
    model_name: model?.name,
    provider: model?.provider,
  };
}

/**
 * Every layer that applies to a request by `key` for `model` (undefined: no model, e.g. a
 * pass-through request without a model lookup) at `nowMs` (schedules).
 */
export function layersFor(snapshot: Snapshot, key: ApiKeyEntry, model: ModelEntry | undefined, nowMs: number): Layer[] {
  const out: Layer[] = [];
  const keyLimits = limitsOf(key.doc.rate_limit);
  if (keyLimits !== undefined) out.push({ bucket: `k:${key.id}`, layer: 'api_key', scope: 'api_key', policy: undefined, limits: keyLimits });
  if (model !== undefined) {
    const modelLimits = limitsOf(model.doc.rate_limit);
    if (modelLimits !== undefined) out.push({ bucket: `m:${model.id}`, layer: 'model', scope: 'model', policy: undefined, limits: modelLimits });
  }
  const policies = policiesOf(snapshot);
  if (policies.classic.size > 0) {
    const team = key.doc.team_id;
    const member = key.doc.user_id;
    const add = (scope: string, ref: string | undefined, suffix = ''): void => {
      if (ref === undefined) return;
      const list = policies.classic.get(`${scope}\u0000${ref}`);
      if (list === undefined) return;
      for (const p of list) out.push({ bucket: `p:${p.id}${suffix}`, layer: 'policy', scope, policy: { id: p.id, name: p.name }, limits: p.limits });
    };
    add('api_key', key.id);
    if (model !== undefined) add('model', model.id);
    add('team', team);
    add('member', member);
    // One bucket per member of the team (a key without a member is its own bucket).
    add('team_member', team, member !== undefined ? `:u:${member}` : `:k:${key.id}`);
  }
  if (policies.conditional.length > 0) {
    const attrs = attributesOf(key, model);
    for (const p of policies.conditional) {
      if (p.suspended?.(nowMs) === true || !p.matches(attrs)) continue;
      let bucket = `p:${p.id}`;
      if (p.groupBy !== undefined) for (const dim of p.groupBy) bucket += `:${dim}=${attrs[dim] ?? ''}`;
      out.push({ bucket, layer: 'policy', scope: 'conditional', policy: { id: p.id, name: p.name }, limits: p.limits });
    }
  }
  return out;
}
