import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HealthTracker, cooldownPolicy } from './health.ts';
import { GroupState, selectTargets, type GroupConfig, type HashSources, type SelectTarget, type Strategy } from './select.ts';

interface T extends SelectTarget {
  tags?: string[];
}

function target(name: string, over: Partial<T> = {}): T {
  return { key: `id-${name}`, name, weight: 1, priority: 0, costPer1k: undefined, ...over };
}

function group(strategy: Strategy, targets: T[], over: Partial<GroupConfig<T>> = {}): GroupState<T> {
  return new GroupState<T>({ strategy, targets, whenAllUnavailable: 'fail', ...over });
}

function tracker() {
  const c = { t: 1_000_000, now: () => c.t };
  return { c, h: new HealthTracker({ now: c.now }) };
}

const cool = cooldownPolicy(undefined);
const fail503 = { errorClass: 'upstream_status', status: 503 } as const;

function names(list: readonly T[]): string[] {
  return list.map((t) => t.name);
}

function firstOf(state: GroupState<T>, h: HealthTracker, req?: Parameters<typeof selectTargets<T>>[2]): string {
  return selectTargets(state, h, req).targets[0].name;
}

function keyed(header: string | undefined, apiKey?: string, cookie?: Record<string, string>): { hash: HashSources } {
  return {
    hash: {
      header: (n) => (n === 'x-tollgate-routing-key' || n === 'x-user' ? header : undefined),
      cookie: (n) => cookie?.[n],
      apiKey: () => apiKey,
      clientIp: () => '10.0.0.1',
    },
  };
}

test('failover: file order, every target once', () => {
  const { h } = tracker();
  const s = group('failover', [target('a'), target('b'), target('c')]);
  for (let i = 0; i < 3; i++) assert.deepEqual(names(selectTargets(s, h).targets), ['a', 'b', 'c']);
});

test('priority tiers: higher priority first, a lower tier only after every higher target', () => {
  const { h } = tracker();
  const s = group('failover', [target('low', { priority: 0 }), target('hi1', { priority: 10 }), target('mid', { priority: 5 }), target('hi2', { priority: 10 })]);
  assert.deepEqual(names(selectTargets(s, h).targets), ['hi1', 'hi2', 'mid', 'low']);
  h.recordFailure('id-hi1', fail503, cool);
  assert.deepEqual(names(selectTargets(s, h).targets), ['hi2', 'mid', 'low']);
  h.recordFailure('id-hi2', fail503, cool);
  assert.deepEqual(names(selectTargets(s, h).targets), ['mid', 'low']);
});

test('priority tiers balance within a tier and keep the next tier behind it', () => {
  const { h } = tracker();
  const s = group('round_robin', [target('b1', { priority: 1 }), target('a1', { priority: 2 }), target('b2', { priority: 1 }), target('a2', { priority: 2 })]);
  const seen = new Set<string>();
  for (let i = 0; i < 4; i++) {
    const list = names(selectTargets(s, h).targets);
    assert.deepEqual(list.slice(2).sort(), ['b1', 'b2']);
    seen.add(list[0]);
  }
  assert.deepEqual([...seen].sort(), ['a1', 'a2']);
});

test('round robin: weights 3:1 over 4000 picks within 2%', () => {
  const { h } = tracker();
  const s = group('round_robin', [target('a', { weight: 3 }), target('b', { weight: 1 })]);
  const counts: Record<string, number> = { a: 0, b: 0 };
  for (let i = 0; i < 4000; i++) counts[firstOf(s, h)]++;
  assert.ok(Math.abs(counts.a / 4000 - 0.75) <= 0.02, JSON.stringify(counts));
  assert.ok(Math.abs(counts.b / 4000 - 0.25) <= 0.02, JSON.stringify(counts));
});

test('round robin is smooth: 1:1 alternates, 5:1:1 interleaves as nginx does', () => {
  const { h } = tracker();
  const even = group('round_robin', [target('a'), target('b')]);
  const seq = Array.from({ length: 8 }, () => firstOf(even, h)).join('');
  assert.equal(seq, 'abababab');
  const skew = group('round_robin', [target('a', { weight: 5 }), target('b'), target('c')]);
  assert.equal(Array.from({ length: 14 }, () => firstOf(skew, h)).join(''), 'aabacaaaabacaa');
});

test('round robin: the whole list holds every target once, weight 0 last', () => {
  const { h } = tracker();
  const s = group('round_robin', [target('z', { weight: 0 }), target('a'), target('b')]);
  for (let i = 0; i < 10; i++) {
    const list = names(selectTargets(s, h).targets);
    assert.equal(list.length, 3);
    assert.equal(list[2], 'z');
    assert.deepEqual([...list].sort(), ['a', 'b', 'z']);
  }
});

test('weight 0 is chosen only when nothing else is left', () => {
  const { h } = tracker();
  const s = group('round_robin', [target('a'), target('z', { weight: 0 })]);
  assert.equal(firstOf(s, h), 'a');
  h.recordFailure('id-a', fail503, cool);
  assert.deepEqual(names(selectTargets(s, h).targets), ['z']);
});

test('round robin state lives in the GroupState across requests', () => {
  const { h } = tracker();
  const targets = [target('a'), target('b')];
  const s1 = group('round_robin', targets);
  assert.equal(firstOf(s1, h), 'a');
  assert.equal(firstOf(s1, h), 'b');
  // A new state (a new snapshot) starts over.
  assert.equal(firstOf(group('round_robin', targets), h), 'a');
});

test('consistent hash: the same key always gets the same first target', () => {
  const { h } = tracker();
  const s = group('consistent_hash', [target('a'), target('b'), target('c'), target('d')]);
  const first = firstOf(s, h, keyed('user-42'));
  for (let i = 0; i < 1000; i++) {
    // Other traffic in between must not move it.
    firstOf(s, h, keyed(`other-${i}`));
    firstOf(s, h);
    assert.equal(firstOf(s, h, keyed('user-42')), first);
  }
});

test('consistent hash: keys spread over equal targets and follow weights', () => {
  const { h } = tracker();
  const even = group('consistent_hash', [target('a'), target('b'), target('c')]);
  const counts: Record<string, number> = { a: 0, b: 0, c: 0 };
  for (let i = 0; i < 3000; i++) counts[firstOf(even, h, keyed(`k${i}`))]++;
  for (const n of Object.values(counts)) assert.ok(n > 700 && n < 1300, JSON.stringify(counts));

  const weighted = group('consistent_hash', [target('a', { weight: 3 }), target('b', { weight: 1 })]);
  let a = 0;
  for (let i = 0; i < 4000; i++) if (firstOf(weighted, h, keyed(`k${i}`)) === 'a') a++;
  assert.ok(Math.abs(a / 4000 - 0.75) < 0.06, String(a));
});

test('consistent hash: losing one target moves only its keys', () => {
  const { h } = tracker();
  const s = group('consistent_hash', [target('a'), target('b'), target('c'), target('d')]);
  const before = Array.from({ length: 2000 }, (_, i) => firstOf(s, h, keyed(`k${i}`)));
  h.recordFailure('id-b', fail503, cool);
  let moved = 0;
  for (let i = 0; i < 2000; i++) {
    const now = firstOf(s, h, keyed(`k${i}`));
    if (before[i] === 'b') {
      assert.notEqual(now, 'b');
      moved++;
    } else {
      assert.equal(now, before[i], `k${i}`);
    }
  }
  assert.ok(moved > 0);
});

test('consistent hash: the full list is every target once, in ring order', () => {
  const { h } = tracker();
  const s = group('consistent_hash', [target('a'), target('b'), target('c'), target('z', { weight: 0 })]);
  const list = names(selectTargets(s, h, keyed('user-1')).targets);
  assert.equal(list.length, 4);
  assert.equal(list[3], 'z');
  assert.deepEqual(names(selectTargets(s, h, keyed('user-1')).targets), list);
});

test('consistent hash: first present hash_on key wins; default header then api key; no key = round robin', () => {
  const { h } = tracker();
  const targets = Array.from({ length: 8 }, (_, i) => target(`t${i}`));
  const s = group('consistent_hash', targets);
  // The header wins over the api key: many api keys, one header, one target.
  const byHeader = new Set(Array.from({ length: 50 }, (_, i) => firstOf(s, h, keyed('same', `key-${i}`))));
  assert.equal(byHeader.size, 1);
  // Without the header, the api key decides.
  const byKey = new Set(Array.from({ length: 50 }, (_, i) => firstOf(s, h, keyed(undefined, `key-${i}`))));
  assert.ok(byKey.size > 1);
  assert.equal(firstOf(s, h, keyed(undefined, 'key-7')), firstOf(s, h, keyed(undefined, 'key-7')));
  // An empty value counts as absent.
  assert.equal(firstOf(s, h, keyed('', 'key-7')), firstOf(s, h, keyed(undefined, 'key-7')));
  // Custom hash_on: a cookie, then a header named in any case.
  const c = group('consistent_hash', targets, { hashOn: [{ type: 'cookie', name: 'sid' }, { type: 'header', name: 'X-User' }] });
  const byCookie = new Set(Array.from({ length: 50 }, (_, i) => firstOf(c, h, keyed(`u${i}`, undefined, { sid: 'one' }))));
  assert.equal(byCookie.size, 1);
  const oneUser = new Set(Array.from({ length: 50 }, () => firstOf(c, h, keyed('u1'))));
  assert.equal(oneUser.size, 1);
  const byUser = new Set(Array.from({ length: 50 }, (_, i) => firstOf(c, h, keyed(`u${i}`))));
  assert.ok(byUser.size > 1);
  // No key at all: round-robin order.
  const two = group('consistent_hash', [target('a'), target('b')]);
  assert.equal(Array.from({ length: 6 }, () => firstOf(two, h, keyed(undefined))).join(''), 'ababab');
});

test('least busy: fewest in-flight per weight first; ties by weight, then file order', () => {
  const { h } = tracker();
  const s = group('least_busy', [target('a'), target('b'), target('c')]);
  assert.deepEqual(names(selectTargets(s, h).targets), ['a', 'b', 'c']);
  h.start('id-a');
  h.start('id-a');
  h.start('id-b');
  assert.deepEqual(names(selectTargets(s, h).targets), ['c', 'b', 'a']);
  h.finish('id-a');
  h.finish('id-a');
  assert.deepEqual(names(selectTargets(s, h).targets), ['a', 'c', 'b']);
  const w = group('least_busy', [target('light'), target('heavy', { weight: 4 })]);
  assert.deepEqual(names(selectTargets(w, h).targets), ['heavy', 'light']);
  for (let i = 0; i < 3; i++) h.start('id-heavy');
  h.start('id-light');
  // 3/4 in flight per weight beats 1/1.
  assert.deepEqual(names(selectTargets(w, h).targets), ['heavy', 'light']);
  h.start('id-heavy');
  h.start('id-heavy');
  assert.deepEqual(names(selectTargets(w, h).targets), ['light', 'heavy']);
});

test('least latency: unsampled first, then the lowest EWMA', () => {
  const { h } = tracker();
  const s = group('least_latency', [target('slow'), target('fast'), target('new')]);
  h.recordSuccess('id-slow', 900);
  h.recordSuccess('id-fast', 100);
  assert.deepEqual(names(selectTargets(s, h).targets), ['new', 'fast', 'slow']);
  h.recordSuccess('id-new', 500);
  assert.deepEqual(names(selectTargets(s, h).targets), ['fast', 'new', 'slow']);
  for (let i = 0; i < 10; i++) h.recordSuccess('id-fast', 2000);
  assert.deepEqual(names(selectTargets(s, h).targets), ['new', 'slow', 'fast']);
});

test('least cost: cheapest first, unpriced last', () => {
  const { h } = tracker();
  const s = group('least_cost', [target('none'), target('dear', { costPer1k: 0.09 }), target('cheap', { costPer1k: 0.002 }), target('free', { costPer1k: 0 })]);
  assert.deepEqual(names(selectTargets(s, h).targets), ['free', 'cheap', 'dear', 'none']);
});

test('cooling targets are skipped while others remain, and return when the cooldown ends', () => {
  const { h, c } = tracker();
  const s = group('failover', [target('a'), target('b')]);
  h.recordFailure('id-a', fail503, cool);
  assert.deepEqual(selectTargets(s, h), { targets: [s.config.targets[1]], mode: 'available' });
  c.t += 30_000;
  assert.deepEqual(names(selectTargets(s, h).targets), ['a', 'b']);
});

test('every target cooling: still tried (reference), whatever when_all_unavailable says', () => {
  for (const when of ['fail', 'try_anyway'] as const) {
    const { h } = tracker();
    const s = group('failover', [target('a'), target('b')], { whenAllUnavailable: when });
    h.recordFailure('id-a', fail503, cool);
    h.recordFailure('id-b', fail503, cool);
    const sel = selectTargets(s, h);
    assert.equal(sel.mode, 'cooling');
    assert.deepEqual(names(sel.targets), ['a', 'b']);
  }
});

test('every target unhealthy: fail yields none, try_anyway tries all in order', () => {
  const { h } = tracker();
  const targets = [target('a', { priority: 1 }), target('b')];
  h.setUnhealthy('id-a', true);
  h.setUnhealthy('id-b', true);
  assert.deepEqual(selectTargets(group('failover', targets), h), { targets: [], mode: 'unavailable' });
  const anyway = selectTargets(group('failover', targets, { whenAllUnavailable: 'try_anyway' }), h);
  assert.equal(anyway.mode, 'forced');
  assert.deepEqual(names(anyway.targets), ['a', 'b']);
  // A cooling target beats unhealthy ones; a healthy one beats both.
  h.recordFailure('id-b', fail503, cool);
  h.setUnhealthy('id-b', false);
  assert.deepEqual(selectTargets(group('failover', targets), h), { targets: [targets[1]], mode: 'cooling' });
  const withHealthy = [...targets, target('c')];
  assert.deepEqual(selectTargets(group('failover', withHealthy), h), { targets: [withHealthy[2]], mode: 'available' });
});

test('the per-request filter removes targets; nothing eligible is reported as such', () => {
  const { h } = tracker();
  const s = group('failover', [target('a', { tags: ['eu'] }), target('b'), target('c', { tags: ['eu'] })]);
  const eu = (t: T) => t.tags?.includes('eu') === true;
  assert.deepEqual(names(selectTargets(s, h, { eligible: eu }).targets), ['a', 'c']);
  const none = selectTargets(s, h, { eligible: () => false });
  assert.deepEqual(none, { targets: [], mode: 'none_eligible' });
  // An unhealthy eligible target is 'unavailable', not 'none_eligible'.
  h.setUnhealthy('id-a', true);
  h.setUnhealthy('id-c', true);
  assert.equal(selectTargets(s, h, { eligible: eu }).mode, 'unavailable');
});
