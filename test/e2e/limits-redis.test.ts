// E2E: limits in Redis (issue 6, spec 3 §3): two gateway processes sharing one Redis enforce one
// limit together; a concurrency lease deleted from Redis mid-stream ends the stream with a 429
// lease-lost record; an unreachable Redis fails open to local counters (logged once, counted) or
// fails closed with 503, and Redis going away mid-run (a TCP relay in front of it is cut) falls
// back to local counters. Runs against the real Redis on 127.0.0.1:6379, each gateway pair under
// its own key prefix, deleted at the end.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import type { Redis } from 'ioredis';
import { startGateway, type Gateway } from '../harness/spawn.ts';
import type { MockUpstream } from '../harness/mock-upstream.ts';
import { heldSlots, useRedisGatewayFixture } from '../harness/redis-fixture.ts';
import { testConfig } from '../harness/proxy-fixture.ts';
import { replyFor, type Turn } from '../harness/provider-wire.ts';
import { logLines, waitForLines } from '../harness/log-lines.ts';
import { clearOfWindowEdge } from '../harness/window-edge.ts';

const KEY = 'sk-e2e-limits-redis-5c2e';
const TEXT: Turn = { text: 'ok', usage: { input: 11, output: 7 } };
const LONG: Turn = { text: 'x'.repeat(200), usage: { input: 11, output: 40 } }; // 40 content frames

let mock: MockUpstream;
let redis: Redis;
const { prefix, gateways } = useRedisGatewayFixture((fx) => ({ mock, redis } = fx));

const resources = (mockUrl: string) => ({
  _format_version: '1',
  provider_keys: [{ display_name: 'up', provider: 'openai', api_key: 'sk-up', api_base: `${mockUrl}/v1` }],
  models: [
    { display_name: 'shared', provider: 'openai', model_name: 'shared-up', provider_key: 'up', rate_limit: { rpm: 3 } },
    { display_name: 'lease', provider: 'openai', model_name: 'lease-up', provider_key: 'up', rate_limit: { concurrency: 1 } },
    { display_name: 'local', provider: 'openai', model_name: 'local-up', provider_key: 'up', rate_limit: { rpm: 2 } },
    { display_name: 'drained', provider: 'openai', model_name: 'drained-up', provider_key: 'up', rate_limit: { concurrency: 5 } },
    // rph: a counter only this model has, to see that its admit ran.
    { display_name: 'stalled', provider: 'openai', model_name: 'stalled-up', provider_key: 'up', rate_limit: { rph: 1000, concurrency: 1 } },
  ],
  api_keys: [{ display_name: 'caller', key_env: 'E2E_LIMITS_REDIS_KEY', allowed_models: ['*'], allowed_routes: ['*'] }],
  passthrough_routes: [{ name: 'pt', path_prefix: '/passthrough/pt', target_url: mockUrl, provider_key: 'up' }],
});

async function gateway(ratelimit: object): Promise<Gateway> {
  const gw = await startGateway({ config: testConfig({ ratelimit }), resources: resources(mock.url), env: { E2E_LIMITS_REDIS_KEY: KEY } });
  gateways.push(gw);
  return gw;
}

const shared = { backend: 'redis', lease_renew_interval_ms: 100, concurrency_ttl_secs: 5, redis: { url: 'redis://127.0.0.1:6379', key_prefix: prefix } };

async function ask(gw: Gateway, model: string, stream = false) {
  const res = await fetch(`${gw.proxyUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], stream }),
  });
  return { status: res.status, headers: res.headers, body: await res.text(), id: res.headers.get('x-tollgate-request-id') ?? '' };
}

describe('limits in Redis', () => {
  let a: Gateway;
  let b: Gateway;
  before(async () => {
    [a, b] = await Promise.all([gateway(shared), gateway(shared)]);
  });

  it('two gateways sharing one Redis enforce one rpm limit together', async () => {
    await clearOfWindowEdge();
    mock.setFallback(replyFor(TEXT));
    assert.equal((await ask(a, 'shared')).status, 200);
    assert.equal((await ask(b, 'shared')).status, 200);
    assert.equal((await ask(a, 'shared')).status, 200);
    const fromB = await ask(b, 'shared');
    // Should a gateway have fallen back to local counters, the message names the outage.
    const outage = [a, b].flatMap((g) => g.stderrText().split('\n').filter((l) => l.includes('rate-limit store')));
    assert.equal(fromB.status, 429, outage.join('\n'));
    assert.equal(JSON.parse(fromB.body).error.message, 'request limit exceeded (requests)');
    assert.ok(Number(fromB.headers.get('retry-after')) >= 1);
    assert.equal((await ask(a, 'shared')).status, 429);
  });

  it('a concurrency slot taken on one gateway is seen by the other', async () => {
    mock.setFallback((req) => ({ ...replyFor(LONG)(req), delayBetweenEventsMs: 20 }));
    const [first, second] = await Promise.all([ask(a, 'lease', true), new Promise((r) => setTimeout(r, 150)).then(() => ask(b, 'lease', true))]);
    assert.equal(first.status, 200);
    assert.equal(second.status, 429);
    assert.equal(JSON.parse(second.body).error.message, 'concurrency limit exceeded');
    // Released at stream end (finalize releases without waiting): the ZSET empties.
    const [key] = await redis.keys(`${prefix}*:conc`);
    let held = await redis.zcard(key);
    for (let i = 0; i < 50 && held > 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
      held = await redis.zcard(key);
    }
    assert.equal(held, 0);
  });

  it('streams cut by the drain timeout give their leases back before the gateway exits', async () => {
    const own = `${prefix}drain:`;
    const gw = await startGateway({
      config: testConfig({ shutdown: { min_drain_secs: 0, drain_timeout_secs: 1 }, ratelimit: { ...shared, concurrency_ttl_secs: 300, redis: { ...shared.redis, key_prefix: own } } }),
      resources: resources(mock.url),
      env: { E2E_LIMITS_REDIS_KEY: KEY },
    });
    gateways.push(gw);
    mock.setFallback((req) => ({ ...replyFor(LONG)(req), delayBetweenEventsMs: 200 }));
    const streams = [1, 2, 3].map(() => ask(gw, 'drained', true).catch(() => undefined));
    let key: string | undefined;
    for (let i = 0; i < 100 && ((key = (await redis.keys(`${own}*:conc`))[0]) === undefined || (await redis.zcard(key)) < 3); i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(key !== undefined);
    assert.equal(await redis.zcard(key), 3);
    gw.signal('SIGTERM');
    assert.equal((await gw.exited).code, 0);
    await Promise.all(streams);
    assert.equal(await redis.zcard(key), 0, 'no lease left for concurrency_ttl_secs');
  });

  it('a lease deleted from Redis mid-stream ends the stream; usage records 429 rate_limit_lease_lost', async () => {
    mock.setFallback((req) => ({ ...replyFor(LONG)(req), delayBetweenEventsMs: 100 }));
    const res = await fetch(`${a.proxyUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
      body: JSON.stringify({ model: 'lease', messages: [{ role: 'user', content: 'hi' }], stream: true }),
    });
    assert.equal(res.status, 200);
    const id = res.headers.get('x-tollgate-request-id');
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = decoder.decode((await reader.read()).value);
    const started = Date.now();
    const keys = await redis.keys(`${prefix}*:conc`);
    assert.equal(keys.length, 1);
    assert.equal(await redis.zcard(keys[0]), 1);
    await redis.del(keys[0]);
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
    }
    // 40 frames 100 ms apart would take 4 s; the renewal (every 100 ms) ends it well before.
    assert.ok(Date.now() - started < 2000, `stream ended after ${Date.now() - started} ms`);
    assert.doesNotMatch(text, /\[DONE\]/);
    assert.match(text, /distributed concurrency lease was lost/);
    const [row] = await waitForLines(a, 'usage', (l) => l.request_id === id);
    assert.equal(row.status, 429);
    assert.equal(row.error_class, 'rate_limit_lease_lost');
    assert.equal(row.error_message, 'distributed concurrency lease was lost');
    // The upstream call was cancelled too.
    await new Promise((r) => setTimeout(r, 200));
    assert.ok(mock.aborted >= 1);
  });
});

describe('Redis leases on pass-through routes', () => {
  let gw: Gateway;
  before(async () => {
    gw = await gateway({ ...shared, redis: { ...shared.redis, key_prefix: `${prefix}pt:` } });
  });

  it('a lease lost before the upstream\'s head ends the call at once with 429 and cancels the upstream request', async () => {
    mock.setFallback((req) => ({ ...replyFor(TEXT)(req), delayHeadersMs: 3000 }));
    const abortedBefore = mock.aborted;
    const started = Date.now();
    const answer = fetch(`${gw.proxyUrl}/passthrough/pt/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
      body: JSON.stringify({ model: 'lease', messages: [{ role: 'user', content: 'hi' }] }),
    });
    let keys: string[] = [];
    for (let i = 0; i < 100 && (keys = await redis.keys(`${prefix}pt:*:conc`)).length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(keys.length, 1, 'the model\'s concurrency slot is held');
    await redis.del(keys[0]);
    const res = await answer;
    const body = await res.text();
    assert.equal(res.status, 429, body);
    assert.match(body, /distributed concurrency lease was lost/);
    assert.ok(Date.now() - started < 2000, `answered after ${Date.now() - started} ms (the upstream head was due at 3000)`);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(mock.aborted, abortedBefore + 1, 'the upstream request was cancelled');
  });
});

describe('Redis unreachable', () => {
  const down = (failure_mode: string) => ({ ...shared, failure_mode, redis: { url: 'redis://127.0.0.1:1', key_prefix: prefix, command_timeout_ms: 200 } });

  it('fail_open: requests are served and limited by local counters; the outage is logged once and counted', async () => {
    const gw = await gateway(down('fail_open'));
    await clearOfWindowEdge();
    mock.setFallback(replyFor(TEXT));
    assert.equal((await ask(gw, 'local')).status, 200);
    assert.equal((await ask(gw, 'local')).status, 200);
    const third = await ask(gw, 'local');
    assert.equal(third.status, 429);
    const metrics = await (await fetch(`${gw.metricsUrl}/metrics`)).text();
    const failures = metrics.split('\n').find((l) => l.startsWith('tollgate_redis_failures_total{operation="admit"}'));
    assert.ok(failures);
    assert.equal(Number(failures.split(' ').at(-1)), 3);
    await waitForLines(gw, 'x', () => false, 1, 300); // let the log batch flush
    const warnings = gw.stderrText().split('\n').filter((l) => l.includes('rate-limit store unreachable'));
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /"level":"warn"/);
    assert.equal(logLines(gw, 'usage').filter((l) => l.status === 200).length, 2);
  });

  it('fail_closed: limited requests are refused with 503 rate_limit_unavailable; unlimited ones are served', async () => {
    const gw = await gateway(down('fail_closed'));
    mock.setFallback(replyFor(TEXT));
    const r = await ask(gw, 'local');
    assert.equal(r.status, 503);
    assert.deepEqual(JSON.parse(r.body).error, { message: 'rate limit store unavailable', type: 'api_error', param: null, code: 'rate_limit_unavailable' });
  });
});

/**
 * A TCP relay to the real Redis that the test can cut, as if Redis stopped, stall and resume, or
 * restore (listening again on the same port, as if Redis came back).
 */
/** Polls `count` every 20 ms until it reads 0 or `tries` polls have passed; returns the last count. */
async function untilZero(count: () => Promise<number>, tries = 50): Promise<number> {
  let n = await count();
  for (let i = 0; i < tries && n > 0; i++) {
    await new Promise((r) => setTimeout(r, 20));
    n = await count();
  }
  return n;
}

async function redisRelay(): Promise<{ port: number; cut(): void; stall(): void; resume(): void; restore(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const clients = new Map<net.Socket, net.Socket>();
  const relay = (client: net.Socket): void => {
    const upstream = net.connect(6379, '127.0.0.1');
    sockets.add(client).add(upstream);
    const close = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
    client.pipe(upstream);
    upstream.pipe(client);
    clients.set(client, upstream);
  };
  let server = net.createServer(relay);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    cut() {
      server.close();
      for (const s of sockets) s.destroy();
      sockets.clear();
      clients.clear();
    },
    async restore() {
      server = net.createServer(relay);
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    },
    // Commands sent meanwhile wait in the relay, and reach Redis in order on resume.
    stall() {
      for (const [client, upstream] of clients) {
        client.unpipe(upstream);
        client.pause();
      }
    },
    resume() {
      for (const [client, upstream] of clients) client.pipe(upstream);
    },
  };
}

describe('Redis stopped mid-run', () => {
  it('an admit that timed out on a stalled Redis leaves no lease behind once Redis runs it', async () => {
    const relay = await redisRelay();
    const own = `${prefix}stall:`;
    const gw = await gateway({ ...shared, concurrency_ttl_secs: 300, redis: { url: `redis://127.0.0.1:${relay.port}`, key_prefix: own, command_timeout_ms: 200 } });
    mock.setFallback(replyFor(TEXT));
    assert.equal((await ask(gw, 'local')).status, 200); // the connection is up
    relay.stall();
    assert.equal((await ask(gw, 'stalled', true)).status, 200, 'fail_open: served on local counters');
    relay.resume();
    let ran = false;
    for (let i = 0; i < 100 && !(ran = (await redis.keys(`${own}*:r:3600:*`)).length > 0); i++) await new Promise((r) => setTimeout(r, 20));
    assert.ok(ran, 'the stalled admit ran once Redis answered');
    // An emptied ZSET is deleted: no lease key, or none with a member.
    const held = () => heldSlots(redis, own);
    assert.equal(await untilZero(held), 0, 'its lease was released behind it');
    relay.cut();
  });

  it('a slot whose release failed while Redis was away is given back once Redis is back, not after concurrency_ttl_secs', async (t) => {
    const relay = await redisRelay();
    // An open relay would keep the test process alive after a failed assertion.
    t.after(() => relay.cut());
    const own = `${prefix}back:`;
    const gw = await gateway({ ...shared, concurrency_ttl_secs: 300, redis: { url: `redis://127.0.0.1:${relay.port}`, key_prefix: own, command_timeout_ms: 200 } });
    mock.setFallback((req) => ({ ...replyFor(LONG)(req), delayBetweenEventsMs: 10 }));
    const stream = ask(gw, 'lease', true);
    const held = () => heldSlots(redis, own);
    for (let i = 0; i < 100 && (await held()) === 0; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(await held(), 1, 'the stream holds its lease in Redis');
    relay.cut();
    const answer = await stream;
    assert.equal(answer.status, 200);
    assert.match(answer.body, /\[DONE\]/, 'an outage does not end a running stream');
    assert.equal(await held(), 1, 'the release could not reach Redis');
    await relay.restore();
    assert.equal(await untilZero(held, 150), 0, 'the release was retried once Redis was back');
    const [row] = await waitForLines(gw, 'usage', (l) => l.request_id === answer.id);
    assert.equal(row.status, 200);
    assert.equal(logLines(gw, 'usage').filter((l) => l.request_id === answer.id).length, 1);
    mock.setFallback(replyFor(TEXT));
    assert.equal((await ask(gw, 'lease')).status, 200, 'the slot is free for the next request');
    // That request releases its own slot at finalize, just after its answer reached the caller.
    assert.equal(await untilZero(held), 0, 'the next request released its slot too');
  });

  it('fail_open: counting moves to local counters when Redis goes away; the outage is logged once and counted', async () => {
    const relay = await redisRelay();
    const gw = await gateway({ ...shared, redis: { url: `redis://127.0.0.1:${relay.port}`, key_prefix: `${prefix}mid:`, command_timeout_ms: 200 } });
    await clearOfWindowEdge();
    mock.setFallback(replyFor(TEXT));
    assert.equal((await ask(gw, 'local')).status, 200); // counted in Redis
    const [key] = await redis.keys(`${prefix}mid:*`);
    assert.ok(key, 'the first request was counted in Redis');
    relay.cut();
    // Local counters start from zero: rpm 2 admits two more, then refuses.
    assert.equal((await ask(gw, 'local')).status, 200);
    assert.equal((await ask(gw, 'local')).status, 200);
    assert.equal((await ask(gw, 'local')).status, 429);
    assert.equal(await redis.get(key), '1', 'nothing reached Redis during the outage');
    const metrics = await (await fetch(`${gw.metricsUrl}/metrics`)).text();
    const failures = metrics.split('\n').find((l) => l.startsWith('tollgate_redis_failures_total{operation="admit"}'));
    assert.equal(Number(failures?.split(' ').at(-1)), 3);
    await waitForLines(gw, 'x', () => false, 1, 300);
    assert.equal(gw.stderrText().split('\n').filter((l) => l.includes('rate-limit store unreachable')).length, 1);
  });
});
