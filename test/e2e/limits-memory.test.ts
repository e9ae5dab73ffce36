// E2E: rate, token and concurrency limits with the in-process store (spec 2 §8, issue 6): the
// 429 in each caller envelope with Retry-After, x-ratelimit-* headers on success, token limits
// charged after the response (at stream end for streams), concurrency slots held for a whole
// stream and released after it, the rejection metric.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Gateway } from '../harness/spawn.ts';
import { useProxyFixture } from '../harness/proxy-fixture.ts';
import type { MockUpstream } from '../harness/mock-upstream.ts';
import { replyFor, type Turn } from '../harness/provider-wire.ts';
import { waitForLines } from '../harness/log-lines.ts';
import { clearOfWindowEdge } from '../harness/window-edge.ts';
import { deriveId } from '../../src/resources/ids.ts';

const KEY = 'sk-e2e-limits-mem-71a0';
const TEXT: Turn = { text: 'ok', usage: { input: 11, output: 7 } }; // 18 tokens

let mock: MockUpstream;
let gw: Gateway;

const model = (name: string, rate_limit: object) => ({ display_name: name, provider: 'openai', model_name: `${name}-up`, provider_key: 'up', rate_limit });

useProxyFixture({
  resources: (mockUrl) => ({
    _format_version: '1',
    provider_keys: [{ display_name: 'up', provider: 'openai', api_key: 'sk-up', api_base: `${mockUrl}/v1` }],
    models: [
      model('rpm-chat', { rpm: 3 }),
      model('rpm-msg', { rpm: 1 }),
      model('tokens', { tpm: 30 }),
      model('tokens-stream', { tpm: 30 }),
      model('tokens-embed', { rpm: 100, tpm: 30 }),
      model('rpm-cmpl', { rpm: 1 }),
      model('conc', { concurrency: 2 }),
      model('hdr', { rpm: 10, tpm: 1000, concurrency: 5 }),
      { display_name: 'pol', provider: 'openai', model_name: 'pol-up', provider_key: 'up' },
    ],
    rate_limit_policies: [{ name: 'pol-cap', scope: 'model', scope_ref: 'pol', window: 'minute', max_requests: 2 }],
    api_keys: [{ display_name: 'caller', key_env: 'E2E_LIMITS_KEY', allowed_models: ['*'] }],
  }),
  env: { E2E_LIMITS_KEY: KEY },
  ready: (fx) => {
    ({ mock, gw } = fx);
  },
});

async function ask(name: string, opts: { endpoint?: 'chat' | 'messages'; stream?: boolean } = {}) {
  const endpoint = opts.endpoint ?? 'chat';
  const stream = opts.stream === true;
  const body = endpoint === 'chat'
    ? { model: name, messages: [{ role: 'user', content: 'hi' }], stream, ...(stream ? { stream_options: { include_usage: true } } : {}) }
    : { model: name, max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], stream };
  const res = await fetch(`${gw.proxyUrl}${endpoint === 'chat' ? '/v1/chat/completions' : '/v1/messages'}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: await res.text(), id: res.headers.get('x-tollgate-request-id') ?? '' };
}

describe('limits (in-process store)', () => {
  it('rpm: the 4th request in a minute is a 429 in the OpenAI envelope with Retry-After, never sent upstream', async () => {
    await clearOfWindowEdge();
    mock.setFallback(replyFor(TEXT));
    for (let i = 0; i < 3; i++) assert.equal((await ask('rpm-chat')).status, 200);
    const r = await ask('rpm-chat');
    assert.equal(r.status, 429);
    assert.deepEqual(JSON.parse(r.body), { error: { message: 'request limit exceeded (requests)', type: 'rate_limit_error', param: null, code: 'rate_limit_exceeded' } });
    const retry = Number(r.headers.get('retry-after'));
    assert.ok(retry >= 1 && retry <= 60, `Retry-After ${retry}`);
    assert.equal(mock.requests.length, 3);
    const [row] = await waitForLines(gw, 'usage', (l) => l.request_id === r.id);
    assert.equal(row.status, 429);
    assert.equal(row.error_class, 'rate_limit_exceeded');
  });

  it('on /v1/messages the 429 is in the Anthropic envelope', async () => {
    await clearOfWindowEdge();
    mock.setFallback(replyFor(TEXT));
    assert.equal((await ask('rpm-msg', { endpoint: 'messages' })).status, 200);
    const r = await ask('rpm-msg', { endpoint: 'messages' });
    assert.equal(r.status, 429);
    const body = JSON.parse(r.body);
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, 'rate_limit_error');
    assert.equal(body.error.message, 'request limit exceeded (requests)');
    assert.ok(r.headers.get('retry-after'));
  });

  it('a policy\'s 429 names the policy as error.policy, in both envelopes', async () => {
    await clearOfWindowEdge();
    mock.setFallback(replyFor(TEXT));
    assert.equal((await ask('pol')).status, 200);
    assert.equal((await ask('pol', { endpoint: 'messages' })).status, 200);
    const policy = { id: deriveId('rate_limit_policies', 'pol-cap'), name: 'pol-cap' };
    const chat = await ask('pol');
    assert.equal(chat.status, 429);
    assert.deepEqual(JSON.parse(chat.body), { error: { message: 'request limit exceeded (requests)', type: 'rate_limit_error', param: null, code: 'rate_limit_exceeded', policy } });
    const messages = await ask('pol', { endpoint: 'messages' });
    assert.equal(messages.status, 429);
    assert.deepEqual(JSON.parse(messages.body), { type: 'error', error: { type: 'rate_limit_error', message: 'request limit exceeded (requests)', policy } });
  });

  it('success responses carry x-ratelimit-* headers', async () => {
    await clearOfWindowEdge();
    mock.setFallback(replyFor(TEXT));
    const r = await ask('hdr');
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('x-ratelimit-limit-requests'), '10');
    assert.equal(r.headers.get('x-ratelimit-remaining-requests'), '9');
    assert.ok(Number(r.headers.get('x-ratelimit-reset-requests')) >= 1);
    assert.equal(r.headers.get('x-ratelimit-limit-tokens'), '1000');
    assert.equal(r.headers.get('x-ratelimit-remaining-tokens'), '1000');
    assert.equal(r.headers.get('x-ratelimit-limit-concurrent'), '5');
    assert.equal(r.headers.get('x-ratelimit-remaining-concurrent'), '4');
    // The first response's tokens were charged: the next one reports them used.
    const next = await ask('hdr');
    assert.equal(next.headers.get('x-ratelimit-remaining-tokens'), '982');
  });

  for (const stream of [false, true]) {
    it(`tpm is charged from the reported usage after the response${stream ? ' (at stream end)' : ''}; once exhausted the next request is a 429`, async () => {
      await clearOfWindowEdge();
      mock.setFallback(replyFor(TEXT));
      const name = stream ? 'tokens-stream' : 'tokens';
      assert.equal((await ask(name, { stream })).status, 200); // 18 used
      assert.equal((await ask(name, { stream })).status, 200); // 18 < 30 admitted, 36 used
      const r = await ask(name, { stream });
      assert.equal(r.status, 429);
      assert.equal(JSON.parse(r.body).error.message, 'token limit exceeded (tokens)');
      const retry = Number(r.headers.get('retry-after'));
      assert.ok(retry >= 1 && retry <= 60);
      assert.equal(mock.requests.length, 2);
    });
  }

  it('embeddings are limited like chat: tpm charged from the reported usage, then a 429 in the OpenAI envelope', async () => {
    await clearOfWindowEdge();
    mock.setFallback((req) => ({ json: { object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.5] }], model: req.json?.model, usage: { prompt_tokens: 18, total_tokens: 18 } } }));
    const embed = () =>
      fetch(`${gw.proxyUrl}/v1/embeddings`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
        body: JSON.stringify({ model: 'tokens-embed', input: 'hi' }),
      });
    const first = await embed();
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('x-ratelimit-remaining-requests'), '99');
    assert.equal((await embed()).status, 200); // 18 < 30 admitted, 36 used
    const r = await embed();
    assert.equal(r.status, 429);
    assert.deepEqual(await r.json(), { error: { message: 'token limit exceeded (tokens)', type: 'rate_limit_error', param: null, code: 'rate_limit_exceeded' } });
    assert.equal(mock.requests.length, 2);
  });

  it('completions are limited like chat: the 2nd request in a minute at rpm 1 is a 429, never sent upstream', async () => {
    await clearOfWindowEdge();
    mock.setFallback((req) => ({ json: { id: 'c', object: 'text_completion', model: req.json?.model, choices: [{ index: 0, text: 'x', finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } } }));
    const complete = () =>
      fetch(`${gw.proxyUrl}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
        body: JSON.stringify({ model: 'rpm-cmpl', prompt: 'hi' }),
      });
    assert.equal((await complete()).status, 200);
    const r = await complete();
    assert.equal(r.status, 429);
    assert.equal(((await r.json()) as any).error.message, 'request limit exceeded (requests)');
    assert.equal(mock.requests.length, 1);
  });

  it('concurrency 2: of 4 parallel streams 2 are refused; the slots are released when the streams end', async () => {
    mock.setFallback((req) => ({ ...replyFor(TEXT)(req), delayBetweenEventsMs: 150 }));
    const results = await Promise.all([0, 1, 2, 3].map(() => ask('conc', { stream: true })));
    const statuses = results.map((r) => r.status).sort();
    assert.deepEqual(statuses, [200, 200, 429, 429]);
    const refused = results.find((r) => r.status === 429)!;
    assert.equal(JSON.parse(refused.body).error.message, 'concurrency limit exceeded');
    assert.equal(refused.headers.get('retry-after'), null);
    for (const r of results.filter((x) => x.status === 200)) assert.match(r.body, /data: \[DONE\]/);
    // Both slots are free again.
    mock.setFallback(replyFor(TEXT));
    const again = await Promise.all([ask('conc'), ask('conc')]);
    assert.deepEqual(again.map((r) => r.status), [200, 200]);
  });

  it('a caller that leaves mid-stream gives its slot back', async () => {
    mock.setFallback((req) => ({ ...replyFor(TEXT)(req), delayBetweenEventsMs: 300 }));
    const ac = new AbortController();
    const res = await fetch(`${gw.proxyUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
      body: JSON.stringify({ model: 'conc', messages: [{ role: 'user', content: 'hi' }], stream: true }),
      signal: ac.signal,
    });
    assert.equal(res.status, 200);
    const other = ask('conc', { stream: true });
    await new Promise((r) => setTimeout(r, 100));
    ac.abort();
    await waitForLines(gw, 'usage', (l) => l.status === 499);
    mock.setFallback(replyFor(TEXT));
    assert.equal((await ask('conc')).status, 200);
    assert.equal((await other).status, 200);
  });

  it('rejections are counted by layer and scope', async () => {
    const text = await (await fetch(`${gw.metricsUrl}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith('tollgate_ratelimit_rejections_total{scope="model",layer="model"}'));
    assert.ok(line, text.split('\n').filter((l) => l.includes('ratelimit')).join('\n'));
    assert.ok(Number(line.split(' ').at(-1)) >= 6);
  });
});
