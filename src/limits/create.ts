// Building the limiter from the bootstrap config (`ratelimit` section): the in-process store, or
// the Redis store (single, cluster or sentinel) with an in-process fallback for fail_open.
import type { Cluster, Redis, RedisOptions } from 'ioredis';
import { parseAddr } from '../config/address.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { Limiter, type LimiterLogger, type LimiterMetrics } from './limiter.ts';
import { MemoryStore } from './memory-store.ts';
import { RedisStore } from './redis-store.ts';

export type RateLimitConfig = GatewayConfig['ratelimit'];

/** Fail fast while disconnected (no offline queue), reconnect with capped backoff. */
function baseOptions(r: RateLimitConfig['redis']): RedisOptions {
  return {
    username: r.username,
    password: r.password,
    db: r.database,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: r.command_timeout_ms,
    connectTimeout: Math.max(r.command_timeout_ms, 1000),
    retryStrategy: (times: number) => Math.min(50 * 2 ** Math.min(times, 6), 2000),
    tls: r.tls ? {} : undefined,
  };
}

async function redisClient(r: RateLimitConfig['redis']): Promise<Redis | Cluster> {
  // Loaded only for the Redis backend: the in-process store needs no client.
  const { Cluster, Redis } = await import('ioredis');
  const hostPort = (a: string) => {
    const { host, port } = parseAddr(a);
    return { host, port };
  };
  if (r.mode === 'cluster') {
    const base = baseOptions(r);
    return new Cluster(r.nodes.map(hostPort), { enableOfflineQueue: false, redisOptions: { ...base, db: undefined } });
  }
  if (r.mode === 'sentinel') {
    return new Redis({ ...baseOptions(r), sentinels: r.sentinels.map(hostPort), name: r.master_name });
  }
  return new Redis(r.url, baseOptions(r));
}

/** Wait until the client is connected, at most `ms` (a down Redis is handled per failure_mode). */
function connected(client: Redis | Cluster, ms: number): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      client.off('ready', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    client.once('ready', done);
  });
}

export async function createLimiter(c: RateLimitConfig, deps: { metrics?: LimiterMetrics; logger?: LimiterLogger }): Promise<Limiter> {
  if (c.backend === 'memory') return new Limiter({ store: new MemoryStore(), metrics: deps.metrics, logger: deps.logger });
  const client = await redisClient(c.redis);
  // Connection errors surface as failed calls (counted, logged once per outage); the client's
  // own error events would otherwise be unhandled.
  client.on('error', () => {});
  await connected(client, Math.max(c.redis.command_timeout_ms, 1000));
  return new Limiter({
    store: new RedisStore(client, { keyPrefix: c.redis.key_prefix, leaseTtlSecs: c.concurrency_ttl_secs }),
    fallback: new MemoryStore(),
    failureMode: c.failure_mode,
    renewIntervalMs: c.lease_renew_interval_ms,
    leaseTtlMs: c.concurrency_ttl_secs * 1000,
    metrics: deps.metrics,
    logger: deps.logger,
  });
}
