import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { isGatewayError, type GatewayError } from '../lib/errors.ts';
import { Limiter, type LimitRequest } from './limiter.ts';
import { MemoryStore } from './memory-store.ts';
import type { LimitStore } from './store.ts';
import { keyEntry, modelEntry, testSnapshot } from './test-snapshot.ts';

const T0 = 1_760_000_020_000; // 40 s into a minute

function counting() {
  const rejections: string[] = [];
  const failures: string[] = [];
  return {
    rejections,
    failures,
    metrics: {
      rateLimitRejections: { inc: (l: { scope: string; layer: string }) => void rejections.push(`${l.layer}/${l.scope}`) },
      redisFailures: { inc: (l: { operation: string }) => void failures.push(l.operation) },
    },
  };
}

async function refusal(p: Promise<unknown> | undefined): Promise<GatewayError> {
  assert.ok(p !== undefined, 'expected a limit to apply');
  try {
    await p;
  } catch (err) {
    if (isGatewayError(err)) return err;
    throw err;
  }
  assert.fail('expected a refusal');
}

function setup(parts: Parameters<typeof testSnapshot>[0], keyId = 'key-0', model: string | null = 'm0') {
  const clock = { now: T0 };
  const c = counting();
  const store = new MemoryStore(() => clock.now);
  const limiter = new Limiter({ store, now: () => clock.now, metrics: c.metrics });
  const snapshot = testSnapshot(parts);
  const req: LimitRequest = {
    snapshot,
    key: keyEntry(snapshot, keyId),
    model: model === null ? undefined : modelEntry(snapshot, model),
    chargeTokens: true,
  };
  return { clock, limiter, req, store, ...c };
}

describe('layers', () => {
  test('no limit anywhere: nothing to hold, and no promise to await', () => {
    const { limiter, req } = setup({ api_keys: [{}], models: [{}] });
    assert.equal(limiter.admit(req), undefined);
  });

  test('key and model limits are AND-ed; the tighter one refuses with Retry-After to the window end', async () => {
    const { limiter, req, rejections } = setup({ api_keys: [{ rate_limit: { rpm: 5 } }], models: [{ rate_limit: { rpm: 2 } }] });
    await limiter.admit(req);
    await limiter.admit(req);
    const e = await refusal(limiter.admit(req));
    assert.equal(e.status, 429);
    assert.equal(e.code, 'rate_limit_exceeded');
    assert.equal(e.type, 'rate_limit_error');
    assert.equal(e.message, 'request limit exceeded (requests)');
    assert.deepEqual(e.headers, { 'retry-after': '20' });
    assert.equal(e.policy, undefined, 'no policy refused');
    assert.deepEqual(rejections, ['model/model']);
  });

  test('a refused request costs no other layer anything', async () => {
    const { limiter, req, clock } = setup({ api_keys: [{ rate_limit: { rpm: 3 } }], models: [{ rate_limit: { rpm: 1 } }, {}] });
    await limiter.admit(req);
    await refusal(limiter.admit(req));
    await refusal(limiter.admit(req));
    // The key's own counter saw one request: two more fit on another model.
    const other = { ...req, model: modelEntry(req.snapshot, 'm1') };
    await limiter.admit(other);
    await limiter.admit(other);
    await refusal(limiter.admit(other));
    clock.now = T0 + 20_000;
    assert.notEqual(await limiter.admit(other), undefined);
  });

  test('every request dimension has its own window', async () => {
    const { limiter, req, clock } = setup({ api_keys: [{ rate_limit: { rps: 1, rph: 2 } }] }, 'key-0', null);
    await limiter.admit(req);
    await refusal(limiter.admit(req)); // same second
    clock.now = T0 + 1000;
    await limiter.admit(req);
    clock.now = T0 + 2000;
    const e = await refusal(limiter.admit(req)); // rph exhausted
    // 40 s into a minute of an hour: Retry-After counts to the end of the hour window.
    const hourLeft = Math.ceil((3_600_000 - ((T0 + 2000) % 3_600_000)) / 1000);
    assert.equal(e.headers?.['retry-after'], String(hourLeft));
  });

  test('several counters refuse: Retry-After waits out the one whose window ends last', async () => {
    // rps and rpm both exhausted in the same second: retrying after 1 s would hit the minute.
    const { limiter, req, rejections } = setup({ api_keys: [{ rate_limit: { rps: 1 } }], models: [{ rate_limit: { rpm: 1 } }] });
    await limiter.admit(req);
    const e = await refusal(limiter.admit(req));
    assert.equal(e.headers?.['retry-after'], '20');
    assert.deepEqual(rejections, ['model/model']);
    // Only the second refuses once it is over: its own window end.
    const { limiter: l2, req: r2, clock } = setup({ api_keys: [{ rate_limit: { rps: 1, rpm: 5 } }] }, 'key-0', null);
    await l2.admit(r2);
    clock.now = T0 + 400;
    assert.equal((await refusal(l2.admit(r2))).headers?.['retry-after'], '1');
  });

  test('a model group is limited by its own rate_limit', async () => {
    const { limiter, req } = setup({ api_keys: [{}], models: [{ display_name: 'grp', routing: { targets: [{ model: 'x' }] }, rate_limit: { rpm: 1 } } as never] }, 'key-0', 'grp');
    await limiter.admit(req);
    await refusal(limiter.admit(req));
  });
});

describe('tokens', () => {
  test('token limits are check-only before dispatch and charged from usage at release', async () => {
    const { limiter, req, clock } = setup({ api_keys: [{ rate_limit: { tpm: 100 } }] }, 'key-0', null);
    const h1 = await limiter.admit(req);
    const h2 = await limiter.admit(req);
    assert.ok(h1 && h2);
    h1.release({ totalTokens: 70 });
    h2.release({ promptTokens: 20, completionTokens: 10 }); // no total: prompt + completion
    await new Promise((r) => setImmediate(r));
    const e = await refusal(limiter.admit(req));
    assert.equal(e.message, 'token limit exceeded (tokens)');
    assert.equal(e.headers?.['retry-after'], '20');
    clock.now = T0 + 20_000;
    assert.ok(await limiter.admit(req));
  });

  test('chargeTokens false (pass-through) checks the token counters but never charges them', async () => {
    const { limiter, req } = setup({ api_keys: [{ rate_limit: { tpm: 10 } }] }, 'key-0', null);
    const h = await limiter.admit({ ...req, chargeTokens: false });
    h?.release({ totalTokens: 500 });
    await new Promise((r) => setImmediate(r));
    assert.ok(await limiter.admit(req));
  });

  test('a second release does not charge twice', async () => {
    const { limiter, req } = setup({ api_keys: [{ rate_limit: { tpm: 100 } }] }, 'key-0', null);
    const h = await limiter.admit(req);
    h?.release({ totalTokens: 60 });
    h?.release({ totalTokens: 60 });
    await new Promise((r) => setImmediate(r));
    assert.ok(await limiter.admit(req));
  });
});

describe('concurrency', () => {
  test('slots are held until release, and the refusal has no Retry-After', async () => {
    const { limiter, req } = setup({ api_keys: [{ rate_limit: { concurrency: 2 } }] }, 'key-0', null);
    const a = await limiter.admit(req);
    const b = await limiter.admit(req);
    const e = await refusal(limiter.admit(req));
    assert.equal(e.message, 'concurrency limit exceeded');
    assert.equal(e.headers, undefined);
    a?.release(undefined);
    await new Promise((r) => setImmediate(r));
    assert.ok(await limiter.admit(req));
    void b;
  });
});

describe('headers', () => {
  test('the most constrained counter of each family is reported', async () => {
    const { limiter, req } = setup({ api_keys: [{ rate_limit: { rpm: 10, rpd: 3, tpm: 1000, concurrency: 4 } }], models: [{ rate_limit: { tpm: 50 } }] });
    const h = await limiter.admit(req);
    const headers = Object.fromEntries(h?.headers ?? []);
    const dayLeft = Math.ceil((86_400_000 - (T0 % 86_400_000)) / 1000);
    assert.deepEqual(headers, {
      'x-ratelimit-limit-requests': '3',
      'x-ratelimit-remaining-requests': '2',
      'x-ratelimit-reset-requests': String(dayLeft),
      'x-ratelimit-limit-tokens': '50',
      'x-ratelimit-remaining-tokens': '50',
      'x-ratelimit-reset-tokens': '20',
      'x-ratelimit-limit-concurrent': '4',
      'x-ratelimit-remaining-concurrent': '3',
    });
  });
});

describe('headers when counters tie', () => {
  test('of counters with as few left, the one whose window ends last gives the reset (what a refusal would name)', async () => {
    const { limiter, req } = setup({ api_keys: [{ rate_limit: { rpm: 1, rph: 1 } }] }, 'key-0', null);
    const h = await limiter.admit(req);
    const headers = Object.fromEntries(h?.headers ?? []);
    const hourLeft = Math.ceil((3_600_000 - (T0 % 3_600_000)) / 1000);
    assert.equal(headers['x-ratelimit-remaining-requests'], '0');
    assert.equal(headers['x-ratelimit-reset-requests'], String(hourLeft));
    const e = await refusal(limiter.admit(req));
    assert.deepEqual(e.headers, { 'retry-after': String(hourLeft) });
  });
});

describe('policies', () => {
  test('a refusal by an inline limit is labelled with the first policy that applied', async () => {
    const { limiter, req } = setup({
      api_keys: [{ team_id: 't1', rate_limit: { rpm: 1 } }],
      models: [{}],
      policies: [{ scope: 'team', scope_ref: 't1', window: 'minute', max_requests: 100 } as never],
    });
    const admitted = { policyName: undefined as string | undefined };
    await limiter.admit({ ...req, attribution: admitted });
    assert.equal(admitted.policyName, 'p0');
    const refused = { policyName: undefined as string | undefined };
    const e = await refusal(limiter.admit({ ...req, attribution: refused }));
    assert.equal(e.policy, undefined, 'the inline limit refused, not the policy');
    assert.equal(refused.policyName, 'p0');
  });

  test('classic policies match by scope: api_key, model, team, member', async () => {
    for (const [scope, ref] of [['api_key', 'key-0'], ['model', 'model-0'], ['team', 't1'], ['member', 'u1']] as const) {
      const { limiter, req, rejections } = setup({
        api_keys: [{ team_id: 't1', user_id: 'u1' }],
        models: [{}],
        policies: [{ scope, scope_ref: ref, window: 'minute', max_requests: 1 } as never, { scope, scope_ref: 'other', window: 'minute', max_requests: 1 } as never],
      });
      await limiter.admit(req);
      const attribution = { policyName: undefined as string | undefined };
      const e = await refusal(limiter.admit({ ...req, attribution }));
      assert.deepEqual(e.policy, { id: 'policy-0', name: 'p0' }, 'error.policy');
      assert.deepEqual(rejections, [`policy/${scope}`], scope);
      assert.equal(attribution.policyName, 'p0');
    }
  });

  test('team policies share one bucket across the team; team_member gives each member its own', async () => {
    const parts = (scope: string) => ({
      api_keys: [{ team_id: 't1', user_id: 'u1' }, { team_id: 't1', user_id: 'u2' }],
      policies: [{ scope, scope_ref: 't1', window: 'minute', max_requests: 1 } as never],
    });
    const team = setup(parts('team'), 'key-0', null);
    await team.limiter.admit(team.req);
    await refusal(team.limiter.admit({ ...team.req, key: keyEntry(team.req.snapshot, 'key-1') }));
    const tm = setup(parts('team_member'), 'key-0', null);
    await tm.limiter.admit(tm.req);
    await refusal(tm.limiter.admit(tm.req));
    assert.ok(await tm.limiter.admit({ ...tm.req, key: keyEntry(tm.req.snapshot, 'key-1') }));
  });

  test('a classic policy with a token cap over an hour window', async () => {
    const { limiter, req } = setup({ api_keys: [{}], policies: [{ scope: 'api_key', scope_ref: 'key-0', window: 'hour', max_tokens: 10 } as never] }, 'key-0', null);
    (await limiter.admit(req))?.release({ totalTokens: 10 });
    await new Promise((r) => setImmediate(r));
    const e = await refusal(limiter.admit(req));
    assert.equal(e.message, 'token limit exceeded (tokens)');
  });

  test('conditional policies apply only where their condition matches', async () => {
    const { limiter, req } = setup({
      api_keys: [{ team_id: 'gold' }],
      models: [{ display_name: 'gpt-4o' }, { display_name: 'cheap' }],
      policies: [{ limits: { rpm: 1 }, conditions: { logic: 'and', children: [{ dimension: 'model_name', operator: '~~', value: '^gpt-' }, { dimension: 'team', operator: '==', value: 'gold' }] } } as never],
    }, 'key-0', 'gpt-4o');
    await limiter.admit(req);
    await refusal(limiter.admit(req));
    const cheap = { ...req, model: modelEntry(req.snapshot, 'cheap') };
    // No layer applies to the other model at all.
    assert.equal(await limiter.admit(cheap), undefined);
    assert.equal(await limiter.admit(cheap), undefined);
  });

  test('group_by splits a conditional policy into one bucket per value', async () => {
    const { limiter, req } = setup({
      api_keys: [{}],
      models: [{}, {}],
      policies: [{ limits: { rpm: 1 }, group_by: ['model'] } as never],
    });
    await limiter.admit(req);
    await refusal(limiter.admit(req));
    assert.ok(await limiter.admit({ ...req, model: modelEntry(req.snapshot, 'm1') }));
  });

  test('a schedule suspends enforcement inside its period', async () => {
    // T0 is 2025-10-09T08:53:40Z, a Thursday.
    const { limiter, req, clock } = setup({
      api_keys: [{}],
      policies: [{ limits: { rpm: 1 }, schedules: [{ timezone: 'UTC', start_time: '08:00', end_time: '09:00', days_of_week: ['thu'] }] } as never],
    }, 'key-0', null);
    assert.equal(new Date(T0).toISOString(), '2025-10-09T08:53:40.000Z');
    assert.equal(await limiter.admit(req), undefined);
    assert.equal(await limiter.admit(req), undefined);
    clock.now = T0 + 7 * 60_000; // 09:00:40: enforced again
    await limiter.admit(req);
    await refusal(limiter.admit(req));
  });
});

/** A shared store that is down (every call rejects) or answers that leases are gone. */
class BrokenStore implements LimitStore {
  down = true;
  leasesGone = false;
  readonly inner = new MemoryStore(() => T0);
  admit(...a: Parameters<LimitStore['admit']>) {
    return this.down ? Promise.reject(new Error('connect ECONNREFUSED')) : Promise.resolve(this.inner.admit(...a));
  }
  charge(...a: Parameters<LimitStore['charge']>) {
    return this.down ? Promise.reject(new Error('down')) : Promise.resolve(this.inner.charge(...a));
  }
  release(...a: Parameters<LimitStore['release']>) {
    return this.down ? Promise.reject(new Error('down')) : Promise.resolve(this.inner.release(...a));
  }
  renew(...a: Parameters<LimitStore['renew']>) {
    if (this.down) return Promise.reject(new Error('down'));
    return Promise.resolve(this.leasesGone ? false : this.inner.renew(...a));
  }
  async close() {}
}

describe('shared store failures', () => {
  const parts = { api_keys: [{ rate_limit: { rpm: 2 } }] };
  function shared(failureMode: 'fail_open' | 'fail_closed') {
    const c = counting();
    const warnings: string[] = [];
    const store = new BrokenStore();
    const limiter = new Limiter({
      store,
      fallback: new MemoryStore(() => T0),
      failureMode,
      renewIntervalMs: 1_000_000,
      now: () => T0,
      metrics: c.metrics,
      logger: { warn: (_o, m) => void warnings.push(m), info: (_o, m) => void warnings.push(`info: ${m}`) },
    });
    const snapshot = testSnapshot(parts);
    return { store, limiter, warnings, ...c, req: { snapshot, key: keyEntry(snapshot, 'key-0'), model: undefined, chargeTokens: true } };
  }

  test('fail_open serves from local counters (still enforced), warns once per outage, counts every failure', async () => {
    const { limiter, req, warnings, failures, store } = shared('fail_open');
    await limiter.admit(req);
    await limiter.admit(req);
    await refusal(limiter.admit(req));
    assert.deepEqual(failures, ['admit', 'admit', 'admit']);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /counting locally/);
    store.down = false;
    assert.ok(await limiter.admit(req));
    assert.equal(warnings.at(-1), 'info: rate-limit store reachable again');
  });

  test('fail_closed refuses limited requests with 503 while the store is down', async () => {
    const { limiter, req, failures } = shared('fail_closed');
    const e = await refusal(limiter.admit(req));
    assert.equal(e.status, 503);
    assert.equal(e.code, 'rate_limit_unavailable');
    assert.deepEqual(failures, ['admit']);
  });

  test('a renewal that finds the lease gone ends the request; an unreachable store does not', async () => {
    const snapshot = testSnapshot({ api_keys: [{ rate_limit: { concurrency: 1 } }] });
    const { limiter, store, failures } = shared('fail_open');
    store.down = false;
    const h = await limiter.admit({ snapshot, key: keyEntry(snapshot, 'key-0'), model: undefined, chargeTokens: true });
    assert.ok(h);
    let lost = 0;
    h.onLost(() => lost++);
    assert.equal(limiter.heldLeases, 1);
    store.down = true;
    await limiter.renewAll();
    assert.equal(lost, 0);
    assert.deepEqual(failures, ['renew']);
    store.down = false;
    await limiter.renewAll();
    assert.equal(lost, 0);
    store.leasesGone = true;
    await limiter.renewAll();
    assert.equal(lost, 1);
    assert.equal(limiter.heldLeases, 0);
    h.release(undefined);
    await limiter.close();
  });

  test('a release the store did not take is retried until it lands, then the slot is free again', async () => {
    const snapshot = testSnapshot({ api_keys: [{ rate_limit: { concurrency: 1 } }] });
    const store = new BrokenStore();
    store.down = false;
    const c = counting();
    const limiter = new Limiter({ store, fallback: new MemoryStore(() => T0), renewIntervalMs: 1_000_000, leaseTtlMs: 60_000, releaseRetryMs: 10, now: () => T0, metrics: c.metrics });
    const req = { snapshot, key: keyEntry(snapshot, 'key-0'), model: undefined, chargeTokens: true };
    const h = await limiter.admit(req);
    assert.ok(h);
    store.down = true;
    h.release(undefined);
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(limiter.unreleasedLeases, 1);
    assert.ok(c.failures.length >= 2 && c.failures.every((f) => f === 'release'), c.failures.join());
    store.down = false;
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(limiter.unreleasedLeases, 0);
    const again = await limiter.admit(req);
    assert.equal(again?.store, store, 'admitted by the shared store: its slot was given back');
    again?.release(undefined);
    await limiter.close();
  });

  test('a release is retried no longer than the lease lives', async () => {
    const snapshot = testSnapshot({ api_keys: [{ rate_limit: { concurrency: 1 } }] });
    const store = new BrokenStore();
    store.down = false;
    let now = T0;
    const limiter = new Limiter({ store, fallback: new MemoryStore(() => T0), renewIntervalMs: 1_000_000, leaseTtlMs: 60_000, releaseRetryMs: 10, now: () => now });
    const h = await limiter.admit({ snapshot, key: keyEntry(snapshot, 'key-0'), model: undefined, chargeTokens: true });
    store.down = true;
    h?.release(undefined);
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(limiter.unreleasedLeases, 1);
    now += 60_000;
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(limiter.unreleasedLeases, 0);
    await limiter.close();
  });

  test('an admit refused before it was sent leaves no release behind', async () => {
    const snapshot = testSnapshot({ api_keys: [{ rate_limit: { concurrency: 1 } }] });
    const store = new BrokenStore();
    Object.assign(store, { neverSent: () => true });
    const limiter = new Limiter({ store, fallback: new MemoryStore(() => T0), renewIntervalMs: 1_000_000, releaseRetryMs: 10, now: () => T0 });
    const h = await limiter.admit({ snapshot, key: keyEntry(snapshot, 'key-0'), model: undefined, chargeTokens: true });
    assert.notEqual(h?.store, store, 'served by the fallback');
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(limiter.unreleasedLeases, 0);
    h?.release(undefined);
    await limiter.close();
  });

  test('a released lease is no longer renewed', async () => {
    const snapshot = testSnapshot({ api_keys: [{ rate_limit: { concurrency: 1 } }] });
    const { limiter, store } = shared('fail_open');
    store.down = false;
    const h = await limiter.admit({ snapshot, key: keyEntry(snapshot, 'key-0'), model: undefined, chargeTokens: true });
    h?.release(undefined);
    assert.equal(limiter.heldLeases, 0);
    await limiter.close();
  });
});
