// Against the real Redis on 127.0.0.1:6379 (always running for the test suite); every key
// of this run lives under a unique prefix, deleted at the end.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { RedisStore } from './redis-store.ts';
import type { CounterCheck } from './store.ts';
import { clearOfWindowEdge } from '../../test/harness/window-edge.ts';

const prefix = `tollgate-test:{${randomBytes(4).toString('hex')}}:`;
let redis: Redis;
let store: RedisStore;

before(async () => {
  redis = new Redis('redis://127.0.0.1:6379', { lazyConnect: true });
  await redis.connect();
  store = new RedisStore(redis.duplicate(), { keyPrefix: prefix, leaseTtlSecs: 1 });
});

after(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await store.close();
  await redis.quit();
});

const rpm = (key: string, max: number): CounterCheck => ({ key, kind: 'requests', windowSecs: 60, max });
const tpm = (key: string, max: number): CounterCheck => ({ key, kind: 'tokens', windowSecs: 60, max });

test('check-and-increment is all-or-nothing across counters, keyed by the Redis-clock window', async () => {
  await clearOfWindowEdge();
  const a = rpm('a:r:60', 3);
  const b = rpm('b:r:60', 1);
  const first = await store.admit([a, b], [], '');
  assert.equal(first.failed, -1);
  assert.deepEqual(first.used, [1, 1]);
  assert.ok(first.resetMs[0] > 0 && first.resetMs[0] <= 60_000);
  const refused = await store.admit([a, b], [], '');
  assert.equal(refused.failed, 1);
  // `a` was not incremented by the refused admission.
  assert.deepEqual((await store.admit([a], [], '')).used, [2]);
  const [key] = await redis.keys(`${prefix}a:r:60:*`);
  const [secs, ms] = await redis.time();
  const now = Number(secs) * 1000 + Math.floor(Number(ms) / 1000);
  assert.equal(key, `${prefix}a:r:60:${now - (now % 60_000)}`);
  const ttl = await redis.pttl(key);
  assert.ok(ttl > 0 && ttl <= 61_000, `counter expires with its window (pttl ${ttl})`);
});

test('token counters are checked without increment and charged separately', async () => {
  await clearOfWindowEdge();
  const t = tpm('t:t:60', 100);
  assert.deepEqual((await store.admit([t], [], '')).used, [0]);
  await store.charge([t], 99);
  assert.equal((await store.admit([t], [], '')).failed, -1);
  await store.charge([t], 1);
  const o = await store.admit([t], [], '');
  assert.equal(o.failed, 0);
  assert.deepEqual(o.used, [100]);
});

test('concurrency is a ZSET of leases: full sets refuse, release frees, renew detects loss', async () => {
  const slot = { key: 'c:conc', max: 2 };
  assert.deepEqual((await store.admit([], [slot], 'l1')).held, [1]);
  assert.deepEqual((await store.admit([], [slot], 'l2')).held, [2]);
  const counter = rpm('c:r:60', 10);
  assert.equal((await store.admit([counter], [slot], 'l3')).failed, 1);
  assert.deepEqual((await store.admit([counter], [], '')).used, [1], 'the refused admission counted nothing');
  assert.equal(await store.renew(['c:conc'], 'l1'), true);
  await store.release(['c:conc'], 'l1');
  assert.equal(await store.renew(['c:conc'], 'l1'), false);
  assert.deepEqual(await redis.zrange(`${prefix}c:conc`, 0, -1), ['l2']);
  await redis.zrem(`${prefix}c:conc`, 'l2');
  assert.equal(await store.renew(['c:conc'], 'l2'), false, 'a lease deleted behind our back is lost');
});

test('an unrenewed lease expires after the lease TTL and frees its slot', async () => {
  const slot = { key: 'e:conc', max: 1 };
  await store.admit([], [slot], 'crashed');
  assert.equal((await store.admit([], [slot], 'next')).failed, 0);
  await new Promise((r) => setTimeout(r, 1100));
  assert.equal((await store.admit([], [slot], 'next')).failed, -1);
  assert.equal(await store.renew(['e:conc'], 'crashed'), false);
});

test('renewal pushes the lease expiry forward', async () => {
  const slot = { key: 'r:conc', max: 1 };
  await store.admit([], [slot], 'held');
  await new Promise((r) => setTimeout(r, 600));
  assert.equal(await store.renew(['r:conc'], 'held'), true);
  await new Promise((r) => setTimeout(r, 600));
  // 1.2 s after admission (TTL 1 s) but renewed at 0.6 s: still held.
  assert.equal((await store.admit([], [slot], 'other')).failed, 0);
  await store.release(['r:conc'], 'held');
});
