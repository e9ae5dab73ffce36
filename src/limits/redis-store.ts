// The Redis counter store: counters and concurrency leases shared by every gateway process that
// points at the same Redis. Each admission is ONE Lua script (atomic on the server) that reads
// the Redis clock (TIME), so gateways with skewed clocks still agree on window bounds.
//
// Keys: `<prefix><bucket>:<kind>:<windowSecs>:<windowStartMs>` (string counters, expiring at
// the window end) and `<prefix><bucket>:conc` (a ZSET of lease ids scored by their expiry; an
// unrenewed lease falls out after concurrency_ttl_secs). The window start is only known inside
// the script, so keys are derived there; in cluster mode every key must hash to one slot, which
// the default prefix's `{...}` hash tag guarantees.
import type { Cluster, Redis } from 'ioredis';
import type { AdmitOutcome, CounterCheck, LimitStore, SlotCheck } from './store.ts';

const NOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

// KEYS: n counter bases, then m slot sets. ARGV: n, m, lease, ttlMs, then kind/windowMs/max per
// counter (kind 1 = requests, 2 = tokens), then max per slot set.
// Returns {failed (0 = admitted, else 1-based index), used x n, resetMs x n, held x m}.
const ADMIT = `${NOW}
local n = tonumber(ARGV[1])
local m = tonumber(ARGV[2])
local lease = ARGV[3]
local ttl = tonumber(ARGV[4])
local failed = 0
local keys, kinds, ends, used, resets, held = {}, {}, {}, {}, {}, {}
for i = 1, n do
  local base = 4 + (i - 1) * 3
  local kind = tonumber(ARGV[base + 1])
  local w = tonumber(ARGV[base + 2])
  local max = tonumber(ARGV[base + 3])
  local start = now - (now % w)
  keys[i] = KEYS[i] .. ':' .. start
  kinds[i] = kind
  ends[i] = start + w
  local cur = tonumber(redis.call('GET', keys[i]) or '0')
  used[i] = cur
  resets[i] = start + w - now
  if failed == 0 then
    if (kind == 1 and cur + 1 > max) or (kind == 2 and cur >= max) then failed = i end
  end
end
for j = 1, m do
  local k = KEYS[n + j]
  local max = tonumber(ARGV[4 + n * 3 + j])
  redis.call('ZREMRANGEBYSCORE', k, '-inf', now)
  local c = redis.call('ZCARD', k)
  held[j] = c
  if failed == 0 and c >= max then failed = n + j end
end
if failed == 0 then
  for i = 1, n do
    if kinds[i] == 1 then
      used[i] = redis.call('INCR', keys[i])
      redis.call('PEXPIREAT', keys[i], ends[i] + 1000)
    end
  end
  for j = 1, m do
    local k = KEYS[n + j]
    redis.call('ZADD', k, now + ttl, lease)
    redis.call('PEXPIRE', k, ttl)
    held[j] = held[j] + 1
  end
end
local out = {failed}
for i = 1, n do out[#out + 1] = used[i] end
for i = 1, n do out[#out + 1] = resets[i] end
for j = 1, m do out[#out + 1] = held[j] end
return out
`;

// KEYS: counter bases. ARGV: amount, then windowMs per counter.
const CHARGE = `${NOW}
local amount = tonumber(ARGV[1])
for i = 1, #KEYS do
  local w = tonumber(ARGV[i + 1])
  local start = now - (now % w)
  local k = KEYS[i] .. ':' .. start
  redis.call('INCRBY', k, amount)
  redis.call('PEXPIREAT', k, start + w + 1000)
end
return 1
`;

// KEYS: slot sets. ARGV: lease, ttlMs. 0 when the lease is missing (or expired) in any set.
const RENEW = `${NOW}
local lease = ARGV[1]
local ttl = tonumber(ARGV[2])
for i = 1, #KEYS do
  local score = redis.call('ZSCORE', KEYS[i], lease)
  if not score or tonumber(score) <= now then return 0 end
end
for i = 1, #KEYS do
  redis.call('ZADD', KEYS[i], 'XX', now + ttl, lease)
  redis.call('PEXPIRE', KEYS[i], ttl)
end
return 1
`;

type Client = Redis | Cluster;

interface Scripts {
  tollgateAdmit(numKeys: number, ...args: Array<string | number>): Promise<number[]>;
  tollgateCharge(numKeys: number, ...args: Array<string | number>): Promise<number>;
  tollgateRenew(numKeys: number, ...args: Array<string | number>): Promise<number>;
}

export interface RedisStoreOptions {
  /** Prepended to every key; keep a `{hash tag}` in it for cluster mode. */
  keyPrefix: string;
  /** Lease lifetime without renewal (concurrency_ttl_secs). */
  leaseTtlSecs: number;
}

export class RedisStore implements LimitStore {
  readonly client: Client;
  private readonly scripts: Scripts;
  private readonly prefix: string;
  private readonly ttlMs: number;

  constructor(client: Client, options: RedisStoreOptions) {
    this.client = client;
    this.prefix = options.keyPrefix;
    this.ttlMs = options.leaseTtlSecs * 1000;
    client.defineCommand('tollgateAdmit', { lua: ADMIT });
    client.defineCommand('tollgateCharge', { lua: CHARGE });
    client.defineCommand('tollgateRenew', { lua: RENEW });
    this.scripts = client as unknown as Scripts;
  }

  async admit(counters: readonly CounterCheck[], slots: readonly SlotCheck[], leaseId: string): Promise<AdmitOutcome> {
    const n = counters.length;
    const m = slots.length;
    const args: Array<string | number> = [];
    for (const c of counters) args.push(this.prefix + c.key);
    for (const s of slots) args.push(this.prefix + s.key);
    args.push(n, m, leaseId, this.ttlMs);
    for (const c of counters) args.push(c.kind === 'requests' ? 1 : 2, c.windowSecs * 1000, c.max);
    for (const s of slots) args.push(s.max);
    const out = await this.scripts.tollgateAdmit(n + m, ...args);
    return {
      failed: out[0] - 1,
      used: out.slice(1, 1 + n),
      resetMs: out.slice(1 + n, 1 + 2 * n),
      held: out.slice(1 + 2 * n, 1 + 2 * n + m),
    };
  }

  async charge(counters: readonly CounterCheck[], amount: number): Promise<void> {
    if (counters.length === 0 || amount <= 0) return;
    const args: Array<string | number> = counters.map((c) => this.prefix + c.key);
    args.push(amount);
    for (const c of counters) args.push(c.windowSecs * 1000);
    await this.scripts.tollgateCharge(counters.length, ...args);
  }

  async release(slotKeys: readonly string[], leaseId: string): Promise<void> {
    if (slotKeys.length === 0) return;
    if (slotKeys.length === 1) {
      await this.client.zrem(this.prefix + slotKeys[0], leaseId);
      return;
    }
    const pipeline = this.client.pipeline();
    for (const key of slotKeys) pipeline.zrem(this.prefix + key, leaseId);
    const results = await pipeline.exec();
    const failure = results?.find(([err]) => err !== null);
    if (failure !== undefined) throw failure[0] as Error;
  }

  async renew(slotKeys: readonly string[], leaseId: string): Promise<boolean> {
    if (slotKeys.length === 0) return true;
    const args: Array<string | number> = slotKeys.map((k) => this.prefix + k);
    args.push(leaseId, this.ttlMs);
    return (await this.scripts.tollgateRenew(slotKeys.length, ...args)) === 1;
  }

  /** With no offline queue, a call made while disconnected is refused before it is written. */
  neverSent(err: unknown): boolean {
    return err instanceof Error && err.message.includes('enableOfflineQueue options is false');
  }

  /** The full Redis key of a store key (tests). */
  keyOf(key: string): string {
    return this.prefix + key;
  }

  async close(): Promise<void> {
    try {
      await this.client.quit();
    } catch {
      this.client.disconnect();
    }
  }
}
