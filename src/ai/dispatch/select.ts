// Target selection of a model group: the ordered list of targets one request may try.
//
// Rules (reference/ai-gateway.md §3.4 "Routing algorithm"):
// - Targets partition into priority tiers, higher `priority` first; a lower tier comes after
//   every target of the higher ones in the list, so the attempt loop reaches it only when those
//   are exhausted. Each tier keeps its own balancing state.
// - The strategy orders a tier: failover = file order; round_robin = smooth weighted round robin
//   (nginx); consistent_hash = a weighted ketama ring over the first present `hash_on` value
//   (round_robin order when none is present); least_latency = lowest latency EWMA, unsampled
//   first; least_busy = fewest in-flight per unit of weight; least_cost = cheapest input+output
//   per-1k price, unpriced last. Targets of weight 0 come after the weighted ones of their tier.
// - Cooling and background-unhealthy targets are left out while any other target remains. If
//   none remains, targets that are only cooling are still tried; if every target is unhealthy,
//   `when_all_unavailable: try_anyway` tries them all and `fail` yields none (the caller answers
//   503 all_candidates_unavailable with Retry-After: 30).
import type { HealthReader, TargetHealth } from './health.ts';

export type Strategy = 'failover' | 'round_robin' | 'consistent_hash' | 'least_latency' | 'least_busy' | 'least_cost';
export type HashOnType = 'header' | 'cookie' | 'api_key' | 'client_ip';

export interface SelectTarget {
  /** Model id of the target: the HealthTracker key. */
  readonly key: string;
  readonly name: string;
  readonly weight: number;
  readonly priority: number;
  /** input_per_1k + output_per_1k of the target model; undefined when it has no price. */
  readonly costPer1k: number | undefined;
}

export interface HashOn {
  readonly type: HashOnType;
  /** Header (any case) or cookie name; required for those two types. */
  readonly name?: string;
}

export interface GroupConfig<T extends SelectTarget> {
  readonly strategy: Strategy;
  readonly targets: readonly T[];
  readonly hashOn?: readonly HashOn[];
  readonly whenAllUnavailable: 'fail' | 'try_anyway';
}

/** Request values consistent_hash may key on; the dispatch layer fills it per request. */
export interface HashSources {
  /** Header value by lower-case name. */
  header(name: string): string | undefined;
  cookie(name: string): string | undefined;
  /** A stable id of the caller's API key (never the secret itself). */
  apiKey(): string | undefined;
  clientIp(): string | undefined;
}

export interface SelectRequest<T extends SelectTarget> {
  readonly hash?: HashSources;
  /** Per-request filter (allowed_cidrs, endpoint support, tags); false = never try this target. */
  readonly eligible?: (target: T) => boolean;
}

/**
 * How the list came about: `available` (healthy targets), `cooling` (nothing healthy, cooling
 * targets tried anyway), `forced` (every target unhealthy, try_anyway), `unavailable` (every
 * target unhealthy, fail: empty), `none_eligible` (the request's filter left nothing: empty).
 */
export type SelectionMode = 'available' | 'cooling' | 'forced' | 'unavailable' | 'none_eligible';

export interface Selection<T> {
  readonly targets: T[];
  readonly mode: SelectionMode;
}

/** reference §3.4: `hash_on` default, header `x-<gateway>-routing-key` then the API key. */
export const DEFAULT_HASH_ON: readonly HashOn[] = [{ type: 'header', name: 'x-tollgate-routing-key' }, { type: 'api_key' }];
/** reference §1.6: the fixed Retry-After (seconds) of a 503 all_candidates_unavailable. */
export const ALL_UNAVAILABLE_RETRY_AFTER_S = 30;
/** Ring points per target of average weight (ketama's 160). */
export const RING_POINTS_PER_TARGET = 160;

/** 32-bit FNV-1a over UTF-16 units, finished with murmur3's fmix32 for avalanche. */
export function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

interface Ring {
  points: Uint32Array;
  owners: Uint32Array;
}

class Tier<T extends SelectTarget> {
  readonly targets: T[];
  /** Smooth WRR current weights, one per target. */
  readonly current: Float64Array;
  /** Per-call scratch: sort keys, and candidate / taken flags for the ring walk. */
  readonly sortKey: Float64Array;
  readonly flags: Uint8Array;
  ring: Ring | undefined;

  constructor(targets: T[]) {
    this.targets = targets;
    this.current = new Float64Array(targets.length);
    this.sortKey = new Float64Array(targets.length);
    this.flags = new Uint8Array(targets.length);
  }
}

function buildRing(targets: readonly SelectTarget[]): Ring {
  let total = 0;
  let weighted = 0;
  for (const t of targets) {
    if (t.weight > 0) {
      total += t.weight;
      weighted++;
    }
  }
  const counts = targets.map((t) => (t.weight > 0 ? Math.max(1, Math.round((RING_POINTS_PER_TARGET * weighted * t.weight) / total)) : 0));
  const size = counts.reduce((a, b) => a + b, 0);
  const raw: { point: number; owner: number }[] = [];
  targets.forEach((t, owner) => {
    for (let j = 0; j < counts[owner]; j++) raw.push({ point: hash32(`${t.key}#${j}`), owner });
  });
  raw.sort((a, b) => a.point - b.point || a.owner - b.owner);
  const points = new Uint32Array(size);
  const owners = new Uint32Array(size);
  raw.forEach((r, i) => {
    points[i] = r.point;
    owners[i] = r.owner;
  });
  return { points, owners };
}

/**
 * A group's selection state: its tiers and their round-robin counters and hash ring. Create one
 * per group per snapshot and share it across that snapshot's requests.
 */
export class GroupState<T extends SelectTarget> {
  readonly config: GroupConfig<T>;
  readonly tiers: readonly Tier<T>[];
  readonly hashOn: readonly HashOn[];

  constructor(config: GroupConfig<T>) {
    this.config = config;
    const priorities = [...new Set(config.targets.map((t) => t.priority))].sort((a, b) => b - a);
    this.tiers = priorities.map((p) => new Tier(config.targets.filter((t) => t.priority === p)));
    this.hashOn = (config.hashOn ?? DEFAULT_HASH_ON).map((h) => (h.name === undefined ? h : { type: h.type, name: h.name.toLowerCase() }));
    if (config.strategy === 'consistent_hash') {
      for (const tier of this.tiers) tier.ring = buildRing(tier.targets);
    }
  }
}

function hashValue(hashOn: readonly HashOn[], src: HashSources | undefined): string | undefined {
  if (src === undefined) return undefined;
  for (const h of hashOn) {
    let v: string | undefined;
    switch (h.type) {
      case 'header':
        v = src.header(h.name ?? '');
        break;
      case 'cookie':
        v = src.cookie(h.name ?? '');
        break;
      case 'api_key':
        v = src.apiKey();
        break;
      case 'client_ip':
        v = src.clientIp();
        break;
    }
    if (v !== undefined && v !== '') return v;
  }
  return undefined;
}

/** Level a target must be at or below to be tried in a pass: 0 available, 1 cooling, 2 unhealthy. */
function level(h: TargetHealth | undefined, now: number): number {
  if (h === undefined) return 0;
  if (h.unhealthy) return 2;
  return h.coolingUntil > now ? 1 : 0;
}

/** Appends `weighted` (local indexes, file order) in smooth-WRR order; advances the counters. */
function roundRobin<T extends SelectTarget>(tier: Tier<T>, weighted: number[], out: T[]): void {
  if (weighted.length === 0) return;
  const { current, targets } = tier;
  let total = 0;
  let best = -1;
  for (const i of weighted) {
    const w = targets[i].weight;
    current[i] += w;
    total += w;
    if (best < 0 || current[i] > current[best]) best = i;
  }
  current[best] -= total;
  // After the pick, the remaining targets follow in the order the next picks would favour them.
  weighted.sort((a, b) => (a === best ? -1 : b === best ? 1 : current[b] - current[a] || a - b));
  for (const i of weighted) out.push(targets[i]);
}

/** Appends `weighted` in ring order from the key's position (distinct targets, each once). */
function ringOrder<T extends SelectTarget>(tier: Tier<T>, weighted: number[], key: string, out: T[]): void {
  const ring = tier.ring as Ring;
  const { points, owners } = ring;
  const flags = tier.flags;
  flags.fill(0);
  for (const i of weighted) flags[i] = 1;
  const h = hash32(key);
  let lo = 0;
  let hi = points.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (points[mid] < h) lo = mid + 1;
    else hi = mid;
  }
  let left = weighted.length;
  for (let step = 0; step < points.length && left > 0; step++) {
    const o = owners[(lo + step) % points.length];
    if (flags[o] === 1) {
      flags[o] = 2;
      out.push(tier.targets[o]);
      left--;
    }
  }
}

function orderTier<T extends SelectTarget>(
  state: GroupState<T>,
  tier: Tier<T>,
  health: HealthReader,
  now: number,
  maxLevel: number,
  req: SelectRequest<T> | undefined,
  hashKey: string | undefined,
  out: T[],
): void {
  const { targets, sortKey } = tier;
  const strategy = state.config.strategy;
  const eligible = req?.eligible;
  const weighted: number[] = [];
  const zero: number[] = [];
  for (let i = 0; i < targets.length; i++) {
    const t = targets[i];
    if (eligible !== undefined && !eligible(t)) continue;
    const h = health.peek(t.key);
    if (level(h, now) > maxLevel) continue;
    if (t.weight > 0) weighted.push(i);
    else zero.push(i);
    switch (strategy) {
      case 'least_latency':
        // Unsampled targets first so they get measured.
        sortKey[i] = h?.latencyEwmaMs ?? -1;
        break;
      case 'least_busy':
        sortKey[i] = (h?.inFlight ?? 0) / (t.weight > 0 ? t.weight : 1);
        break;
      case 'least_cost':
        sortKey[i] = t.costPer1k ?? Infinity;
        break;
      default:
        break;
    }
  }
  switch (strategy) {
    case 'failover':
      for (const i of weighted) out.push(targets[i]);
      break;
    case 'round_robin':
      roundRobin(tier, weighted, out);
      break;
    case 'consistent_hash':
      if (hashKey === undefined) roundRobin(tier, weighted, out);
      else ringOrder(tier, weighted, hashKey, out);
      break;
    case 'least_busy':
      // Equal load per weight: the heavier target first, then file order.
      weighted.sort((a, b) => sortKey[a] - sortKey[b] || targets[b].weight - targets[a].weight || a - b);
      for (const i of weighted) out.push(targets[i]);
      break;
    case 'least_latency':
    case 'least_cost':
      weighted.sort((a, b) => sortKey[a] - sortKey[b] || a - b);
      for (const i of weighted) out.push(targets[i]);
      break;
  }
  if (zero.length > 0) {
    if (strategy === 'least_latency' || strategy === 'least_busy' || strategy === 'least_cost') {
      zero.sort((a, b) => sortKey[a] - sortKey[b] || a - b);
    }
    for (const i of zero) out.push(targets[i]);
  }
}

function collect<T extends SelectTarget>(
  state: GroupState<T>,
  health: HealthReader,
  now: number,
  maxLevel: number,
  req: SelectRequest<T> | undefined,
  hashKey: string | undefined,
): T[] {
  const out: T[] = [];
  for (const tier of state.tiers) orderTier(state, tier, health, now, maxLevel, req, hashKey, out);
  return out;
}

/** The ordered targets one request may try (see the module comment for the rules). */
export function selectTargets<T extends SelectTarget>(state: GroupState<T>, health: HealthReader, req?: SelectRequest<T>): Selection<T> {
  const now = health.now();
  const hashKey = state.config.strategy === 'consistent_hash' ? hashValue(state.hashOn, req?.hash) : undefined;
  const available = collect(state, health, now, 0, req, hashKey);
  if (available.length > 0) return { targets: available, mode: 'available' };
  const cooling = collect(state, health, now, 1, req, hashKey);
  if (cooling.length > 0) return { targets: cooling, mode: 'cooling' };
  const eligible = req?.eligible;
  if (eligible !== undefined && !state.config.targets.some(eligible)) return { targets: [], mode: 'none_eligible' };
  if (state.config.whenAllUnavailable === 'fail') return { targets: [], mode: 'unavailable' };
  return { targets: collect(state, health, now, 2, req, hashKey), mode: 'forced' };
}
