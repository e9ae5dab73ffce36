// Model groups compiled for dispatch: a group's targets resolved to direct models (nested groups
// flattened), each with its retry count, cooldown policy and timeouts, and the group's selection
// state. Compiled lazily, once per group entry of a snapshot (entries are per snapshot).
import type { ModelEntry, Snapshot } from '../../snapshot/snapshot.ts';
import type { RoutingModelDoc } from '../../resources/model.ts';
import { cooldownPolicy, type CooldownPolicy } from './health.ts';
import { retrySettings, type RetrySettings } from './retry-policy.ts';
import { GroupState, type SelectTarget, type Strategy } from './select.ts';

export interface GroupTarget extends SelectTarget {
  readonly entry: ModelEntry;
  /** The upstream model name (a wildcard target's capture filled in). */
  readonly upstreamModel: string;
  /** The target model's own `retries`. */
  readonly retries: number | undefined;
  readonly cooldown: CooldownPolicy;
  readonly timeoutMs: number | undefined;
  readonly streamTimeoutMs: number | undefined;
  /** Its routing tags: its own and those of the nested groups' entries it was reached through. */
  readonly tags: readonly string[];
}

export interface GroupPlan {
  readonly state: GroupState<GroupTarget>;
  readonly retry: RetrySettings;
}

const plans = new WeakMap<ModelEntry, GroupPlan>();
const directPolicies = new WeakMap<ModelEntry, CooldownPolicy>();
const healthTargetsBySnapshot = new WeakMap<Snapshot, ReadonlyMap<string, HealthTarget>>();

/** The cooldown policy of a direct model (defaults when it has no `cooldown` block). */
export function directCooldown(entry: ModelEntry): CooldownPolicy {
  let p = directPolicies.get(entry);
  if (p === undefined) {
    p = cooldownPolicy('cooldown' in entry.doc ? entry.doc.cooldown : undefined);
    directPolicies.set(entry, p);
  }
  return p;
}

function directRetries(entry: ModelEntry): number | undefined {
  return 'retries' in entry.doc ? entry.doc.retries : undefined;
}

function costPer1k(entry: ModelEntry): number | undefined {
  const cost = 'cost' in entry.doc ? entry.doc.cost : undefined;
  if (cost === undefined || (cost.input_per_1k === undefined && cost.output_per_1k === undefined)) return undefined;
  return (cost.input_per_1k ?? 0) + (cost.output_per_1k ?? 0);
}

/**
 * Direct targets of a group in file order. A target that is itself a group contributes its own
 * direct targets in its place, with the outer target's priority and its own weights; the loader
 * rejects cycles, `seen` only guards against a malformed snapshot.
 */
function flatten(
  snapshot: Snapshot,
  group: ModelEntry,
  deploymentRetries: number,
  outer: { timeoutMs?: number; streamTimeoutMs?: number },
  priority: number | undefined,
  seen: Set<string>,
  out: GroupTarget[],
  outerTags: readonly string[] = [],
): void {
  if (seen.has(group.id)) return;
  seen.add(group.id);
  const doc = group.doc as RoutingModelDoc;
  for (const t of doc.routing.targets) {
    const resolved = snapshot.resolveModel(t.model);
    if (resolved === undefined) continue;
    const entry = resolved.entry;
    const p = priority ?? t.priority ?? 0;
    const tags = t.tags === undefined ? outerTags : [...new Set([...outerTags, ...t.tags])];
    const timeouts = { timeoutMs: group.timeoutMs ?? outer.timeoutMs, streamTimeoutMs: group.streamTimeoutMs ?? outer.streamTimeoutMs };
    if (entry.kind === 'group') {
      flatten(snapshot, entry, deploymentRetries, timeouts, p, seen, out, tags);
      continue;
    }
    // A wildcard model can serve several targets under different names: one health key each.
    const key = entry.glob.wildcard ? `${entry.id}#${resolved.upstreamModel}` : entry.id;
    // One target per health key: a model listed again (at another priority, or through a nested
    // group) is the same target, in the highest tier it is listed in (higher tiers go first).
    const listed = out.findIndex((x) => x.key === key);
    if (listed >= 0) {
      const known = out[listed];
      const merged = [...new Set([...known.tags, ...tags])];
      out[listed] = p > known.priority ? { ...known, priority: p, weight: t.weight ?? 1, tags: merged } : { ...known, tags: merged };
      continue;
    }
    out.push({
      key,
      upstreamModel: resolved.upstreamModel,
      name: entry.name,
      weight: t.weight ?? 1,
      priority: p,
      costPer1k: costPer1k(entry),
      entry,
      retries: directRetries(entry),
      cooldown: directCooldown(entry),
      timeoutMs: entry.timeoutMs ?? timeouts.timeoutMs,
      streamTimeoutMs: entry.streamTimeoutMs ?? timeouts.streamTimeoutMs,
      tags,
    });
  }
}

export function groupPlan(snapshot: Snapshot, group: ModelEntry, deploymentRetries: number): GroupPlan {
  let plan = plans.get(group);
  if (plan === undefined) {
    const doc = group.doc as RoutingModelDoc;
    const targets: GroupTarget[] = [];
    flatten(snapshot, group, deploymentRetries, {}, undefined, new Set(), targets);
    plan = {
      state: new GroupState<GroupTarget>({
        strategy: (doc.routing.strategy ?? 'failover') as Strategy,
        targets,
        hashOn: doc.routing.hash_on,
        whenAllUnavailable: doc.routing.when_all_unavailable ?? 'fail',
      }),
      retry: retrySettings(doc.routing, deploymentRetries),
    };
    plans.set(group, plan);
  }
  return plan;
}

/** What a health key stands for: the model (display name) and the upstream model, when one. */
export interface HealthTarget {
  readonly model: string;
  /** The upstream model a request under this key goes to; null for a direct wildcard model. */
  readonly upstreamModel: string | null;
  /** The key of a group model itself: it names no target (its members are the targets). */
  readonly group: boolean;
}

/**
 * Every health key `snapshot` can route to, with the model it names: each model id (direct calls,
 * wildcard ones included, are keyed by id) and each group target's key, which for a wildcard
 * target names the upstream model too. Health for any other key belongs to a target the snapshot
 * no longer has.
 */
export function healthTargets(snapshot: Snapshot): ReadonlyMap<string, HealthTarget> {
  const cached = healthTargetsBySnapshot.get(snapshot);
  if (cached !== undefined) return cached;
  const targets = new Map<string, HealthTarget>();
  for (const m of snapshot.resources.models) {
    const entry = snapshot.resolveModel(m.display_name)?.entry;
    const direct = entry !== undefined && entry.kind === 'direct' && !entry.glob.wildcard;
    targets.set(m.id, { model: m.display_name, upstreamModel: direct ? entry.modelName ?? entry.name : null, group: entry?.kind === 'group' });
    if (entry === undefined || entry.id !== m.id || entry.kind !== 'group') continue;
    const flat: GroupTarget[] = [];
    flatten(snapshot, entry, 0, {}, undefined, new Set(), flat);
    for (const t of flat) targets.set(t.key, { model: t.entry.name, upstreamModel: t.upstreamModel, group: false });
  }
  healthTargetsBySnapshot.set(snapshot, targets);
  return targets;
}

export { directRetries };
