// E2E: model groups (spec 2 §4.3): failover between targets on retryable failures, no failover on
// refusals and invalid requests, 429 rules, priority tiers, same-target retries, cooldown skipping
// a failed target, the streaming first-target rule, per-attempt usage rows, the served-by header,
// attempt counts in the access log, /status/models — each over /v1/chat/completions and
// /v1/messages (a table over endpoints). One mock plays every target; it tells them apart by the
// upstream model name.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Gateway } from '../harness/spawn.ts';
import { useProxyFixture } from '../harness/proxy-fixture.ts';
import type { MockUpstream, RecordedRequest, Reply } from '../harness/mock-upstream.ts';
import { errorReplyFor, replyFor, type Turn } from '../harness/provider-wire.ts';
import { waitForLines } from '../harness/log-lines.ts';
import { deriveId } from '../../src/resources/ids.ts';

const CALLER_KEY = 'sk-e2e-routing-caller-9d1e';

let mock: MockUpstream;
let gw: Gateway;

const target = (name: string, upstream: string, extra: object = {}) => ({ display_name: name, provider: 'openai', model_name: upstream, provider_key: 'up', ...extra });

useProxyFixture({
  config: { upstream: { timeout_ms: 800, retries: 0 } },
  resources: (mockUrl) => ({
    _format_version: '1',
    provider_keys: [
      { display_name: 'up', provider: 'openai', api_key: 'sk-up', api_base: `${mockUrl}/v1` },
      // No adapter serves this provider and no api_base makes it OpenAI-compatible: unusable.
      { display_name: 'no-adapter', provider: 'no-such-provider', api_key: 'sk-none' },
    ],
    models: [
      // Fresh targets per endpoint and scenario, so one scenario's cooldown never shapes another's.
      ...(['chat', 'messages'] as const).flatMap((e) => [
        ...['fo', 'nr', 'rl', 'rl2', 'st', 'hb', 'eb', 'mid', 'cd', 'tm'].flatMap((g) => [target(`${e}-${g}-a`, `${e}-${g}-up-a`), target(`${e}-${g}-b`, `${e}-${g}-up-b`)]),
        ...['fo', 'nr', 'rl', 'st', 'hb', 'eb', 'mid', 'cd', 'tm'].map((g) => ({ display_name: `${e}-g-${g}`, routing: { targets: [{ model: `${e}-${g}-a` }, { model: `${e}-${g}-b` }] } })),
        { display_name: `${e}-g-rl2`, routing: { targets: [{ model: `${e}-rl2-a` }, { model: `${e}-rl2-b` }], fallback_on_statuses: [429] } },
        target(`${e}-broken`, 'never-called', { provider_key: 'no-adapter' }),
        target(`${e}-ok`, `${e}-ok-up`),
        { display_name: `${e}-g-skip`, routing: { targets: [{ model: `${e}-broken` }, { model: `${e}-ok` }] } },
        target(`${e}-skl-a`, `${e}-skl-up-a`),
        { display_name: `${e}-g-skip-last`, routing: { targets: [{ model: `${e}-skl-a` }, { model: `${e}-broken` }] } },
      ]),
      target('retry-a', 'retry-up-a', { retries: 1 }),
      target('lat-long', 'lat-up-long'),
      target('lat-slow', 'lat-up-slow'),
      { display_name: 'g-lat', routing: { strategy: 'least_latency', targets: [{ model: 'lat-long' }, { model: 'lat-slow' }] } },
      target('tier-hi', 'tier-up-hi'),
      target('tier-lo', 'tier-up-lo'),
      { display_name: 'g-retry', routing: { targets: [{ model: 'retry-a' }] } },
      { display_name: 'g-tier', routing: { strategy: 'round_robin', targets: [{ model: 'tier-lo', priority: 0 }, { model: 'tier-hi', priority: 5 }] } },
      target('zone-us', 'zone-up-us'),
      target('zone-eu', 'zone-up-eu'),
      target('zone-any', 'zone-up-any'),
      { display_name: 'g-tags', routing: { targets: [{ model: 'zone-us', tags: ['us'] }, { model: 'zone-eu', tags: ['eu', 'gdpr'] }, { model: 'zone-any', tags: ['default'] }] } },
      { display_name: 'g-tags-strict', routing: { targets: [{ model: 'zone-us', tags: ['us'] }, { model: 'zone-eu', tags: ['eu'] }] } },
    ],
    api_keys: [{ display_name: 'caller', key_env: 'E2E_ROUTING_KEY', allowed_models: ['*'] }],
  }),
  env: { E2E_ROUTING_KEY: CALLER_KEY },
  ready: (fx) => ({ mock, gw } = fx),
});

const TEXT: Turn = { text: 'served', usage: { input: 10, output: 3 } };

/** Script the mock per upstream model: a reply function for each, 200 text by default. */
function byModel(scripts: Record<string, (req: RecordedRequest, nth: number) => Reply>): void {
  const seen = new Map<string, number>();
  mock.setFallback((req) => {
    const model: string = req.json?.model ?? '';
    const nth = seen.get(model) ?? 0;
    seen.set(model, nth + 1);
    const s = scripts[model];
    return s === undefined ? replyFor(TEXT)(req) : s(req, nth);
  });
}

const calledModels = (): string[] => mock.requests.map((r) => r.json?.model);

type Endpoint = 'chat' | 'messages';

async function ask(endpoint: Endpoint, model: string, stream = false, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; body: string; requestId: string }> {
  const path = endpoint === 'chat' ? '/v1/chat/completions' : '/v1/messages';
  const body = endpoint === 'chat'
    ? { model, messages: [{ role: 'user', content: 'hi' }], stream }
    : { model, max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], stream };
  const res = await fetch(`${gw.proxyUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${CALLER_KEY}`, ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: await res.text(), requestId: res.headers.get('x-tollgate-request-id') ?? '' };
}

const usageRows = (requestId: string, count: number) => waitForLines(gw, 'usage', (l) => l.request_id === requestId, count);

for (const endpoint of ['chat', 'messages'] as const) {
  describe(`model groups on ${endpoint}`, () => {
    it('a 5xx from the first target fails over to the next; each attempt leaves its own usage row', async () => {
      byModel({ [`${endpoint}-fo-up-a`]: errorReplyFor(500, 'server_error', 'boom') });
      const r = await ask(endpoint, `${endpoint}-g-fo`);
      assert.equal(r.status, 200, r.body);
      assert.equal(r.headers.get('x-tollgate-served-by'), `${endpoint}-fo-b`);
      assert.match(r.body, /served/);
      assert.match(r.body, new RegExp(`"${endpoint}-g-fo"`), 'the caller sees its alias');
      assert.deepEqual(calledModels(), [`${endpoint}-fo-up-a`, `${endpoint}-fo-up-b`]);
      const rows = await usageRows(r.requestId, 2);
      assert.equal(rows.length, 2);
      const [failed, terminal] = rows;
      assert.equal(failed.attempt_kind, 'initial');
      assert.equal(failed.billable, false);
      assert.equal(failed.prompt_tokens, 0);
      assert.equal(failed.completion_tokens, 0);
      assert.equal(failed.error_class, 'upstream_status');
      assert.equal(failed.status, 502);
      assert.equal(terminal.attempt_kind, 'fallback');
      assert.equal(terminal.status, 200);
      assert.equal(terminal.billable, true);
      assert.equal(terminal.prompt_tokens, 10);
      assert.equal(terminal.requested_model, `${endpoint}-g-fo`);
      assert.notEqual(terminal.model_id, failed.model_id, 'rows name the target that served each attempt');
      const [access] = await waitForLines(gw, 'access', (l) => l.request_id === r.requestId);
      assert.equal(access.attempts, 2);
      assert.equal(access.fallbacks, 1);
    });

    it('a target without a usable provider is skipped with its own row; the request that the next one serves carries no error', async () => {
      const r = await ask(endpoint, `${endpoint}-g-skip`);
      assert.equal(r.status, 200, r.body);
      assert.deepEqual(calledModels(), [`${endpoint}-ok-up`]);
      const [skipped, terminal] = await usageRows(r.requestId, 2);
      assert.equal(skipped.error_class, 'invalid_config');
      assert.equal(skipped.billable, false);
      // The skipped row is the broken target's, not the group's.
      assert.equal(skipped.model_id, deriveId('models', `${endpoint}-broken`));
      assert.equal(skipped.provider, 'openai');
      assert.equal(skipped.upstream_model, 'never-called');
      assert.equal(terminal.status, 200);
      assert.equal(terminal.error_class, null);
      assert.equal(terminal.error_message, null);
      const [access] = await waitForLines(gw, 'access', (l) => l.request_id === r.requestId);
      assert.equal(access.status, 200);
      assert.equal(access.error_kind, undefined);
      // With no target after it, its error is the request's.
      const alone = await ask(endpoint, `${endpoint}-broken`);
      assert.equal(alone.status, 503, alone.body);
      assert.match(alone.body, /has no usable provider/);
      const [row] = await usageRows(alone.requestId, 1);
      assert.equal(row.error_class, 'invalid_config');
    });

    it('a target without a usable provider after a failed one: the terminal row is its own, with none of the failed attempt\'s attribution or timings', async () => {
      byModel({ [`${endpoint}-skl-up-a`]: errorReplyFor(500, 'server_error', 'boom') });
      const r = await ask(endpoint, `${endpoint}-g-skip-last`);
      assert.equal(r.status, 503, r.body);
      const [failed, terminal] = await usageRows(r.requestId, 2);
      assert.equal(failed.model_id, deriveId('models', `${endpoint}-skl-a`));
      assert.equal(failed.upstream_model, `${endpoint}-skl-up-a`);
      assert.equal(terminal.model_id, deriveId('models', `${endpoint}-broken`));
      assert.equal(terminal.upstream_model, 'never-called');
      assert.equal(terminal.provider_key_id, deriveId('provider_keys', 'no-adapter'));
      assert.equal(terminal.error_class, 'invalid_config');
      assert.equal(terminal.ttft_ms, null);
      assert.equal(terminal.upstream_latency_ms, null);
    });

    it('an invalid request (400) is not routed around: the caller gets it and the next target is never called', async () => {
      byModel({ [`${endpoint}-nr-up-a`]: errorReplyFor(400, 'invalid_request_error', 'bad field') });
      const r = await ask(endpoint, `${endpoint}-g-nr`);
      assert.equal(r.status, 400);
      assert.match(r.body, /bad field/);
      assert.deepEqual(calledModels(), [`${endpoint}-nr-up-a`]);
      assert.equal(r.headers.get('x-tollgate-served-by'), null);
      const rows = await usageRows(r.requestId, 1);
      assert.equal(rows.length, 1, 'one terminal row only');
      assert.equal(rows[0].status, 400);
    });

    it('a 429 stops without retry_on_429, and falls over when the group lists 429 in fallback_on_statuses', async () => {
      byModel({ [`${endpoint}-rl-up-a`]: errorReplyFor(429, 'rate_limit_error', 'slow down', { 'retry-after': '9' }), [`${endpoint}-rl2-up-a`]: errorReplyFor(429, 'rate_limit_error', 'slow down') });
      const stopped = await ask(endpoint, `${endpoint}-g-rl`);
      assert.equal(stopped.status, 429);
      assert.equal(stopped.headers.get('retry-after'), '9');
      assert.deepEqual(calledModels(), [`${endpoint}-rl-up-a`]);
      mock.reset();
      byModel({ [`${endpoint}-rl2-up-a`]: errorReplyFor(429, 'rate_limit_error', 'slow down') });
      const fell = await ask(endpoint, `${endpoint}-g-rl2`);
      assert.equal(fell.status, 200);
      assert.deepEqual(calledModels(), [`${endpoint}-rl2-up-a`, `${endpoint}-rl2-up-b`]);
    });

    it('a timeout fails over', async () => {
      byModel({ [`${endpoint}-tm-up-a`]: (req) => ({ ...replyFor(TEXT)(req), delayHeadersMs: 1500 }) });
      const r = await ask(endpoint, `${endpoint}-g-tm`);
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('x-tollgate-served-by'), `${endpoint}-tm-b`);
      const [failed] = await usageRows(r.requestId, 2);
      assert.equal(failed.error_class, 'timeout');
      assert.equal(failed.status, 504);
    });

    it('streaming: a failure before the first byte fails over; the stream comes from the next target', async () => {
      byModel({ [`${endpoint}-st-up-a`]: errorReplyFor(503, 'overloaded', 'busy') });
      const r = await ask(endpoint, `${endpoint}-g-st`, true);
      assert.equal(r.status, 200);
      assert.match(r.headers.get('content-type') ?? '', /text\/event-stream/);
      assert.equal(r.headers.get('x-tollgate-served-by'), `${endpoint}-st-b`);
      assert.deepEqual(calledModels(), [`${endpoint}-st-up-a`, `${endpoint}-st-up-b`]);
    });

    it('streaming: a stream that breaks after its head, before its first event, fails over; the served request carries no error and its target stays healthy', async () => {
      byModel({ [`${endpoint}-hb-up-a`]: (req) => ({ ...replyFor(TEXT)(req), disconnectAfterEvents: 0 }) });
      const r = await ask(endpoint, `${endpoint}-g-hb`, true);
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('x-tollgate-served-by'), `${endpoint}-hb-b`);
      assert.doesNotMatch(r.body, /event: error|"error"/);
      const [failed, terminal] = await usageRows(r.requestId, 2);
      assert.equal(failed.error_class, 'transport');
      assert.equal(terminal.status, 200);
      assert.equal(terminal.billable, true);
      assert.equal(terminal.error_class, null);
      assert.equal(terminal.error_message, null);
      const [access] = await waitForLines(gw, 'access', (l) => l.request_id === r.requestId);
      assert.equal(access.error_kind, undefined);
      const status: any = await (await fetch(`${gw.metricsUrl}/status/models`)).json();
      const served = status.models.find((m: any) => m.model === `${endpoint}-hb-b`);
      assert.ok(served, JSON.stringify(status));
      assert.equal(served.consecutive_failures, 0);
      assert.equal(served.cooling_down_until, null);
    });

    it('streaming: a 200 event stream with an empty body fails over: nothing had reached the caller', async () => {
      byModel({ [`${endpoint}-eb-up-a`]: () => ({ sse: [], done: false }) });
      const r = await ask(endpoint, `${endpoint}-g-eb`, true);
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('x-tollgate-served-by'), `${endpoint}-eb-b`);
      assert.match(r.body, /"serve"/);
      assert.doesNotMatch(r.body, /event: error/);
      const [failed, terminal] = await usageRows(r.requestId, 2);
      assert.equal(failed.error_class, 'upstream_decode');
      assert.equal(terminal.error_class, null);
    });

    it('streaming: no failover once bytes reached the caller; the stream ends with an error event', async () => {
      byModel({ [`${endpoint}-mid-up-a`]: (req) => ({ ...replyFor(TEXT)(req), disconnectAfterEvents: 2 }) });
      const r = await ask(endpoint, `${endpoint}-g-mid`, true);
      assert.equal(r.status, 200);
      assert.match(r.body, /event: error/);
      assert.deepEqual(calledModels(), [`${endpoint}-mid-up-a`], 'the second target is never tried');
      const rows = await usageRows(r.requestId, 1);
      assert.equal(rows.length, 1);
      assert.equal(rows[0].status, 502);
      assert.equal(rows[0].error_class, 'transport');
    });

    it('a target that failed is cooled down: the next request skips it; /status/models shows it', async () => {
      byModel({ [`${endpoint}-cd-up-a`]: errorReplyFor(502, 'bad_gateway', 'down') });
      const first = await ask(endpoint, `${endpoint}-g-cd`);
      assert.equal(first.status, 200);
      assert.deepEqual(calledModels(), [`${endpoint}-cd-up-a`, `${endpoint}-cd-up-b`]);
      mock.reset();
      byModel({});
      const second = await ask(endpoint, `${endpoint}-g-cd`);
      assert.equal(second.status, 200);
      assert.deepEqual(calledModels(), [`${endpoint}-cd-up-b`], 'the cooled-down target is skipped');
      const status: any = await (await fetch(`${gw.metricsUrl}/status/models`)).json();
      const row = status.models.find((m: any) => m.model === `${endpoint}-cd-a`);
      assert.ok(row, JSON.stringify(status));
      assert.ok(row.cooling_down_until !== null && Date.parse(row.cooling_down_until) > Date.now());
    });
  });
}

describe('model groups, endpoint-independent rules', () => {
  it('least_latency ranks by response-head latency: a long answer that starts at once is no slow target', async () => {
    byModel({
      'lat-up-long': (req) => ({ ...replyFor(TEXT)(req), delayBetweenEventsMs: 120 }),
      'lat-up-slow': (req) => ({ ...replyFor(TEXT)(req), delayHeadersMs: 250 }),
    });
    for (const model of ['lat-long', 'lat-slow']) assert.equal((await ask('chat', model, true)).status, 200);
    const status: any = await (await fetch(`${gw.metricsUrl}/status/models`)).json();
    const ewma = (m: string) => status.models.find((r: any) => r.model === m)?.latency_ewma_ms;
    assert.ok(ewma('lat-long') < 100, `lat-long ${ewma('lat-long')}`);
    assert.ok(ewma('lat-slow') >= 240, `lat-slow ${ewma('lat-slow')}`);
    mock.reset();
    byModel({});
    assert.equal((await ask('chat', 'g-lat')).headers.get('x-tollgate-served-by'), 'lat-long');
  });

  it('same-target retries follow the target model\'s `retries`, each retry with its own row', async () => {
    byModel({ 'retry-up-a': (req, nth) => (nth === 0 ? errorReplyFor(500, 'server_error', 'once')(req) : replyFor(TEXT)(req)) });
    const r = await ask('chat', 'g-retry');
    assert.equal(r.status, 200);
    assert.deepEqual(calledModels(), ['retry-up-a', 'retry-up-a']);
    const rows = await usageRows(r.requestId, 2);
    assert.deepEqual(rows.map((x) => x.attempt_kind), ['initial', 'retry']);
  });

  it('a failure after the gateway\'s own retries tells SDKs not to retry again (x-should-retry: false); a first-attempt failure does not', async () => {
    byModel({ 'retry-up-a': errorReplyFor(500, 'server_error', 'down') });
    const retried = await ask('chat', 'g-retry');
    assert.equal(retried.status, 502);
    assert.deepEqual(calledModels(), ['retry-up-a', 'retry-up-a']);
    assert.equal(retried.headers.get('x-should-retry'), 'false');
    mock.reset();
    byModel({ 'chat-nr-up-a': errorReplyFor(400, 'invalid_request_error', 'bad field') });
    const once = await ask('chat', 'chat-g-nr');
    assert.equal(once.status, 400);
    assert.equal(once.headers.get('x-should-retry'), null);
  });

  it('priority tiers: the higher tier serves while it is healthy; the lower only when it is exhausted', async () => {
    byModel({});
    for (let i = 0; i < 4; i++) assert.equal((await ask('chat', 'g-tier')).headers.get('x-tollgate-served-by'), 'tier-hi');
    mock.reset();
    byModel({ 'tier-up-hi': errorReplyFor(500, 'server_error', 'down') });
    const r = await ask('chat', 'g-tier');
    assert.equal(r.headers.get('x-tollgate-served-by'), 'tier-lo');
    assert.deepEqual(calledModels(), ['tier-up-hi', 'tier-up-lo']);
  });

  it('/v1/models hides multi-target aliases', async () => {
    const res = await fetch(`${gw.proxyUrl}/v1/models`, { headers: { authorization: `Bearer ${CALLER_KEY}` } });
    const ids: string[] = ((await res.json()) as any).data.map((m: any) => m.id);
    assert.ok(ids.includes('chat-fo-a') && ids.includes('tier-hi'), ids.join(','));
    assert.ok(!ids.some((id) => id.includes('g-')), ids.join(','));
  });
});

describe('routing tags', () => {
  it('x-tollgate-routing-tags narrows a group to the targets carrying one of the tags, else to those tagged default', async () => {
    byModel({});
    const served = async (tags?: string) => {
      const r = await ask('chat', 'g-tags', false, tags === undefined ? {} : { 'x-tollgate-routing-tags': tags });
      assert.equal(r.status, 200, r.body);
      return r.headers.get('x-tollgate-served-by');
    };
    assert.equal(await served(), 'zone-us', 'no header: no filter, the first target');
    assert.equal(await served('eu'), 'zone-eu');
    assert.equal(await served(' apac , gdpr '), 'zone-eu', 'any of the tags, trimmed');
    assert.equal(await served('apac'), 'zone-any', 'no target carries it: the default-tagged ones');
    assert.ok(!calledModels().includes('never-called'));
  });

  it('tags no target carries, in a group with no default-tagged target: 400, nothing sent upstream', async () => {
    byModel({});
    const before = mock.requests.length;
    const r = await ask('chat', 'g-tags-strict', false, { 'x-tollgate-routing-tags': 'apac' });
    assert.equal(r.status, 400, r.body);
    assert.match(r.body, /no target of model 'g-tags-strict' carries the routing tags apac/);
    assert.equal(mock.requests.length, before);
  });
});
