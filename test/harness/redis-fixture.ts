// E2E tests against the real Redis on 127.0.0.1:6379: a key prefix of the test file's own, the mock
// upstream and the gateways the file starts, with the node:test hooks that start the mock and the
// Redis client before the tests and, after them, stop every gateway and delete the prefix's keys.
import { after, before } from 'node:test';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Gateway } from './spawn.ts';
import { startMockUpstream, type MockUpstream } from './mock-upstream.ts';

export interface RedisGatewayFixture {
  /** The file's key prefix (one Redis Cluster hash slot: `tollgate-e2e:{<hex>}:`). */
  prefix: string;
  /** Gateways pushed here are stopped after the file's tests. */
  gateways: Gateway[];
}

/** Registers the hooks; `ready` copies the mock and the Redis client into the file's variables. */
export function useRedisGatewayFixture(ready: (fx: { mock: MockUpstream; redis: Redis }) => void): RedisGatewayFixture {
  const fx: RedisGatewayFixture = { prefix: `tollgate-e2e:{${randomBytes(4).toString('hex')}}:`, gateways: [] };
  let mock: MockUpstream | undefined;
  let redis: Redis | undefined;
  before(async () => {
    mock = await startMockUpstream();
    redis = new Redis('redis://127.0.0.1:6379');
    ready({ mock, redis });
  });
  after(async () => {
    await Promise.all(fx.gateways.map((g) => g.stop()));
    await mock?.close();
    if (redis === undefined) return;
    const keys = await redis.keys(`${fx.prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });
  return fx;
}

/** Concurrency slots held under `prefix`: the members of its lease sets (`...:conc`). */
export async function heldSlots(redis: Redis, prefix: string): Promise<number> {
  const counts = await Promise.all((await redis.keys(`${prefix}*:conc`)).map((k) => redis.zcard(k)));
  return counts.reduce((a, b) => a + b, 0);
}
