// E2E: caller authentication (spec 2 §5), the model allowlist, GET /v1/models (§4.1) and the
// unauthenticated probes, against the spawned CLI and a mock OpenAI upstream.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import type { Gateway } from '../harness/spawn.ts';
import { useProxyFixture } from '../harness/proxy-fixture.ts';
import type { MockUpstream } from '../harness/mock-upstream.ts';

const UPSTREAM_SECRET = 'sk-upstream-secret';
const KEYS = {
  all: 'sk-e2e-auth-all-7c1d9e',
  limited: 'sk-e2e-auth-limited-2b8f4a',
  none: 'sk-e2e-auth-none-9e3a71',
  glob: 'sk-e2e-auth-glob-5d0c62',
};

let mock: MockUpstream;
let gw: Gateway;

useProxyFixture({
  resources: (mockUrl) => ({
    _format_version: '1',
    provider_keys: [{ display_name: 'up', provider: 'openai', api_key: UPSTREAM_SECRET, api_base: `${mockUrl}/v1` }],
    models: [
      { display_name: 'fast', provider: 'openai', model_name: 'gpt-4o-mini', provider_key: 'up' },
      { display_name: 'gpt-4o', provider: 'openai', model_name: 'gpt-4o', provider_key: 'up' },
      { display_name: 'openai/special', provider: 'openai', model_name: 'gpt-4.1', provider_key: 'up' },
      { display_name: 'openai/*', provider: 'openai', model_name: '*', provider_key: 'up' },
      { display_name: 'pool', routing: { targets: [{ model: 'fast' }, { model: 'gpt-4o' }] } },
      { display_name: 'office-only', provider: 'openai', model_name: 'gpt-4o', provider_key: 'up', allowed_cidrs: ['10.0.0.0/8'] },
      { display_name: 'local-only', provider: 'openai', model_name: 'gpt-4o', provider_key: 'up', allowed_cidrs: ['10.0.0.0/8', '127.0.0.0/8', '::1/128'] },
    ],
    api_keys: [
      { display_name: 'all', key_env: 'E2E_KEY_ALL', allowed_models: ['*'] },
      { display_name: 'limited', key_env: 'E2E_KEY_LIMITED', allowed_models: ['fast'] },
      { display_name: 'none', key_env: 'E2E_KEY_NONE', allowed_models: [] },
      { display_name: 'glob', key_env: 'E2E_KEY_GLOB', allowed_models: ['openai/*'] },
    ],
  }),
  env: { E2E_KEY_ALL: KEYS.all, E2E_KEY_LIMITED: KEYS.limited, E2E_KEY_NONE: KEYS.none, E2E_KEY_GLOB: KEYS.glob },
  ready: (fx) => ({ mock, gw } = fx),
});

const userMessage = [{ role: 'user', content: 'hello' }];

function postChat(headers: Record<string, string>, body: unknown = { model: 'fast', messages: userMessage }): Promise<Response> {
  return fetch(`${gw.proxyUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

function sdk(apiKey: string): OpenAI {
  return new OpenAI({ apiKey, baseURL: `${gw.proxyUrl}/v1`, maxRetries: 0 });
}

async function expectEnvelope(res: Response, status: number, error: { message: string; type: string; code: string | null }): Promise<void> {
  const text = await res.text();
  assert.equal(res.status, status, text);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  const body = JSON.parse(text);
  assert.equal(body.error.message, error.message);
  assert.equal(body.error.type, error.type);
  assert.equal(body.error.code, error.code);
}

/** The upstream saw the provider key's own credential and nothing of the caller's. */
function assertUpstreamCredentials(callerKey: string): void {
  assert.equal(mock.requests.length, 1);
  const h = mock.requests[0].headers;
  assert.equal(h.authorization, `Bearer ${UPSTREAM_SECRET}`);
  assert.equal(h['x-api-key'], undefined);
  assert.ok(!JSON.stringify(h).includes(callerKey), 'the caller key must not reach the upstream');
  assert.ok(!mock.requests[0].body.includes(callerKey));
}

// ---- accepted credential forms ----

test('Authorization: Bearer <key> is accepted and the upstream gets the provider key instead', async () => {
  const res = await postChat({ authorization: `Bearer ${KEYS.all}` });
  assert.equal(res.status, 200, await res.clone().text());
  assert.equal(((await res.json()) as any).model, 'fast');
  assertUpstreamCredentials(KEYS.all);
});

test('bare Authorization: <key> is accepted', async () => {
  const res = await postChat({ authorization: KEYS.all });
  assert.equal(res.status, 200, await res.clone().text());
  await res.arrayBuffer();
  assertUpstreamCredentials(KEYS.all);
});

test('x-api-key: <key> is accepted and not forwarded', async () => {
  const res = await postChat({ 'x-api-key': KEYS.all });
  assert.equal(res.status, 200, await res.clone().text());
  await res.arrayBuffer();
  assertUpstreamCredentials(KEYS.all);
});

test('the SDK authenticates with its Bearer header', async () => {
  const out = await sdk(KEYS.all).chat.completions.create({ model: 'fast', messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(out.model, 'fast');
  assert.equal(out.choices[0].message.content, 'Hello from the mock upstream.');
  assertUpstreamCredentials(KEYS.all);
});

// ---- rejected credentials ----

test('no credential: 401 "Missing API key in request" in the OpenAI envelope, nothing upstream', async () => {
  await expectEnvelope(await postChat({}), 401, { message: 'Missing API key in request', type: 'authentication_error', code: 'missing_api_key' });
  assert.equal(mock.requests.length, 0);
});

test('an unknown key in each header form: 401 "Invalid API key", nothing upstream', async () => {
  const wrong = 'sk-e2e-not-a-configured-key';
  const forms: Array<Record<string, string>> = [{ authorization: `Bearer ${wrong}` }, { authorization: wrong }, { 'x-api-key': wrong }];
  for (const headers of forms) {
    await expectEnvelope(await postChat(headers), 401, { message: 'Invalid API key', type: 'authentication_error', code: 'invalid_api_key' });
  }
  assert.equal(mock.requests.length, 0);
});

test('the SDK raises AuthenticationError for an unknown key', async () => {
  await assert.rejects(sdk('sk-e2e-unknown').chat.completions.create({ model: 'fast', messages: [{ role: 'user', content: 'hi' }] }), (e: any) => {
    assert.ok(e instanceof OpenAI.AuthenticationError, String(e));
    assert.equal(e.status, 401);
    assert.equal((e.error as any).message, 'Invalid API key');
    assert.equal(e.type, 'authentication_error');
    assert.equal(e.code, 'invalid_api_key');
    return true;
  });
  assert.equal(mock.requests.length, 0);
});

// ---- model allowlist ----

function forbidden(model: string) {
  return { message: `Access to model '${model}' is forbidden`, type: 'invalid_request_error', code: 'model_access_forbidden' };
}

test('a model outside allowed_models: 403 model_access_forbidden, nothing upstream', async () => {
  await expectEnvelope(await postChat({ authorization: `Bearer ${KEYS.limited}` }, { model: 'gpt-4o', messages: userMessage }), 403, forbidden('gpt-4o'));
  // The allowlist is checked on the caller's own string before existence: no probing for aliases.
  await expectEnvelope(await postChat({ authorization: `Bearer ${KEYS.limited}` }, { model: 'no-such-alias', messages: userMessage }), 403, forbidden('no-such-alias'));
  assert.equal(mock.requests.length, 0);
  // ...while the one allowed alias works.
  const ok = await postChat({ authorization: `Bearer ${KEYS.limited}` }, { model: 'fast', messages: userMessage });
  assert.equal(ok.status, 200);
  await ok.arrayBuffer();
});

test('the SDK raises PermissionDeniedError for a forbidden model', async () => {
  await assert.rejects(sdk(KEYS.limited).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }), (e: any) => {
    assert.ok(e instanceof OpenAI.PermissionDeniedError, String(e));
    assert.equal(e.status, 403);
    assert.equal((e.error as any).message, "Access to model 'gpt-4o' is forbidden");
    assert.equal(e.type, 'invalid_request_error');
    assert.equal(e.code, 'model_access_forbidden');
    return true;
  });
  assert.equal(mock.requests.length, 0);
});

test('a model\'s allowed_cidrs: a client outside them gets 403 ip_restricted in either envelope, nothing upstream', async () => {
  const restricted = { message: 'Access denied: your client IP is not allowed to use this model', type: 'permission_error', code: 'ip_restricted' };
  await expectEnvelope(await postChat({ authorization: `Bearer ${KEYS.all}` }, { model: 'office-only', messages: userMessage }), 403, restricted);
  const messages = await fetch(`${gw.proxyUrl}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': KEYS.all },
    body: JSON.stringify({ model: 'office-only', max_tokens: 10, messages: userMessage }),
  });
  assert.equal(messages.status, 403);
  assert.deepEqual(await messages.json(), { type: 'error', error: { type: 'permission_error', message: restricted.message } });
  assert.equal(mock.requests.length, 0);
  const ok = await postChat({ authorization: `Bearer ${KEYS.all}` }, { model: 'local-only', messages: userMessage });
  assert.equal(ok.status, 200);
  await ok.arrayBuffer();
});

test('an empty allowed_models allows nothing', async () => {
  for (const model of ['fast', 'gpt-4o', 'openai/gpt-4o']) {
    await expectEnvelope(await postChat({ authorization: `Bearer ${KEYS.none}` }, { model, messages: userMessage }), 403, forbidden(model));
  }
  assert.equal(mock.requests.length, 0);
});

test('a glob in allowed_models (openai/*) allows the names it matches, and only those', async () => {
  const viaWildcard = await postChat({ authorization: `Bearer ${KEYS.glob}` }, { model: 'openai/gpt-4o-mini', messages: userMessage });
  assert.equal(viaWildcard.status, 200, await viaWildcard.clone().text());
  assert.equal(((await viaWildcard.json()) as any).model, 'openai/gpt-4o-mini');
  const exact = await postChat({ authorization: `Bearer ${KEYS.glob}` }, { model: 'openai/special', messages: userMessage });
  assert.equal(exact.status, 200);
  await exact.arrayBuffer();
  assert.deepEqual(mock.requests.map((r) => r.json.model), ['gpt-4o-mini', 'gpt-4.1']);
  await expectEnvelope(await postChat({ authorization: `Bearer ${KEYS.glob}` }, { model: 'fast', messages: userMessage }), 403, forbidden('fast'));
  assert.equal(mock.requests.length, 2);
});

test('"*" in allowed_models allows any name; an unknown one is 404 model_not_found, nothing upstream', async () => {
  const res = await postChat({ authorization: `Bearer ${KEYS.all}` }, { model: 'no-such-model', messages: userMessage });
  const body = (await res.json()) as any;
  assert.equal(res.status, 404);
  assert.equal(body.error.type, 'invalid_request_error');
  assert.equal(body.error.code, 'model_not_found');
  assert.match(body.error.message, /no-such-model/);
  await assert.rejects(sdk(KEYS.all).chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] }), (e: any) => {
    assert.ok(e instanceof OpenAI.NotFoundError, String(e));
    assert.equal(e.code, 'model_not_found');
    return true;
  });
  assert.equal(mock.requests.length, 0);
});

// ---- GET /v1/models ----

async function modelIds(key: string): Promise<string[]> {
  const res = await fetch(`${gw.proxyUrl}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
  const body = (await res.json()) as any;
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(body.object, 'list');
  for (const m of body.data) assert.equal(m.object, 'model');
  return body.data.map((m: { id: string }) => m.id).sort();
}

test('/v1/models lists the concrete aliases the key may use from where it calls; no wildcard patterns, no groups', async () => {
  // office-only's allowed_cidrs exclude this client (127.0.0.1): a request would get 403 ip_restricted.
  assert.deepEqual(await modelIds(KEYS.all), ['fast', 'gpt-4o', 'local-only', 'openai/special']);
  assert.deepEqual(await modelIds(KEYS.limited), ['fast']);
  assert.deepEqual(await modelIds(KEYS.glob), ['openai/special']);
  assert.deepEqual(await modelIds(KEYS.none), []);
  assert.equal(mock.requests.length, 0);
});

test('a request target in absolute form (GET http://host/v1/models) reaches the same route', async () => {
  const { hostname, port } = new URL(gw.proxyUrl);
  const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = http.request({ host: hostname, port, path: `http://${hostname}:${port}/v1/models?x=1`, headers: { authorization: `Bearer ${KEYS.limited}` } }, (r) => {
      let body = '';
      r.setEncoding('utf8').on('data', (d: string) => (body += d)).on('end', () => resolve({ status: r.statusCode ?? 0, body }));
    });
    req.on('error', reject).end();
  });
  assert.equal(res.status, 200, res.body);
  assert.deepEqual(JSON.parse(res.body).data.map((m: { id: string }) => m.id), ['fast']);
});

test('/v1/models through the SDK', async () => {
  const ids: string[] = [];
  for await (const m of sdk(KEYS.limited).models.list()) ids.push(m.id);
  assert.deepEqual(ids, ['fast']);
});

test('/v1/models through the Anthropic SDK: the same list, in the Models API fields', async () => {
  const client = new Anthropic({ apiKey: KEYS.all, baseURL: gw.proxyUrl, maxRetries: 0 });
  const models = [];
  for await (const m of client.models.list()) models.push(m);
  assert.deepEqual(models.map((m) => m.id).sort(), ['fast', 'gpt-4o', 'local-only', 'openai/special']);
  for (const m of models) {
    assert.equal(m.type, 'model');
    assert.equal(m.display_name, m.id);
    assert.ok(!Number.isNaN(Date.parse(m.created_at)));
  }
});

test('/v1/models needs a key', async () => {
  await expectEnvelope(await fetch(`${gw.proxyUrl}/v1/models`), 401, { message: 'Missing API key in request', type: 'authentication_error', code: 'missing_api_key' });
  await expectEnvelope(await fetch(`${gw.proxyUrl}/v1/models`, { headers: { authorization: 'Bearer sk-e2e-nope' } }), 401, {
    message: 'Invalid API key',
    type: 'authentication_error',
    code: 'invalid_api_key',
  });
  await assert.rejects(sdk('sk-e2e-nope').models.list(), (e: any) => e instanceof OpenAI.AuthenticationError);
});

// ---- GET /v1/models/{model} ----

test('/v1/models/{model} through both SDKs: the list\'s entry, a name with a slash included', async () => {
  const fast = await sdk(KEYS.limited).models.retrieve('fast');
  assert.deepEqual([fast.id, fast.object, fast.owned_by], ['fast', 'model', 'openai']);
  // The SDK escapes the slash (openai%2Fspecial); a raw one reaches the same model.
  assert.equal((await sdk(KEYS.glob).models.retrieve('openai/special')).id, 'openai/special');
  const raw = await fetch(`${gw.proxyUrl}/v1/models/openai/special`, { headers: { authorization: `Bearer ${KEYS.glob}` } });
  assert.equal(((await raw.json()) as any).id, 'openai/special');
  const anthropic = await new Anthropic({ apiKey: KEYS.all, baseURL: gw.proxyUrl, maxRetries: 0 }).models.retrieve('gpt-4o');
  assert.deepEqual([anthropic.id, anthropic.type, anthropic.display_name], ['gpt-4o', 'model', 'gpt-4o']);
  assert.ok(!Number.isNaN(Date.parse(anthropic.created_at)));
  assert.equal(mock.requests.length, 0);
});

test('/v1/models/{model}: whatever the list does not show is 404 model_not_found, so a key cannot probe for aliases', async () => {
  const cases: Array<[string, string]> = [
    [KEYS.limited, 'gpt-4o'], // exists, not allowed for this key
    [KEYS.all, 'no-such-model'],
    [KEYS.all, 'openai/*'], // a wildcard pattern
    [KEYS.all, 'openai/gpt-4o'], // served through the wildcard, but no concrete alias
    [KEYS.all, 'pool'], // a group
    [KEYS.all, 'office-only'], // its allowed_cidrs exclude this client
    [KEYS.none, 'fast'],
    [KEYS.all, '%E0%A4%A'], // a malformed escape
  ];
  for (const [key, name] of cases) {
    const res = await fetch(`${gw.proxyUrl}/v1/models/${name.includes('%') ? name : encodeURIComponent(name)}`, { headers: { authorization: `Bearer ${key}` } });
    const body = (await res.json()) as any;
    assert.equal(res.status, 404, name);
    assert.equal(body.error.code, 'model_not_found', name);
    assert.equal(body.error.type, 'invalid_request_error', name);
  }
  await assert.rejects(sdk(KEYS.limited).models.retrieve('gpt-4o'), (e: any) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found');
  // A key first, as for the list; the bare prefix is no route.
  await expectEnvelope(await fetch(`${gw.proxyUrl}/v1/models/fast`), 401, { message: 'Missing API key in request', type: 'authentication_error', code: 'missing_api_key' });
  const bare = await fetch(`${gw.proxyUrl}/v1/models/`, { headers: { authorization: `Bearer ${KEYS.all}` } });
  assert.deepEqual([bare.status, await bare.text()], [404, '']);
  const post = await fetch(`${gw.proxyUrl}/v1/models/fast`, { method: 'POST', headers: { authorization: `Bearer ${KEYS.all}` } });
  assert.deepEqual([post.status, post.headers.get('allow')], [405, 'GET, HEAD']);
  await post.body?.cancel();
  assert.equal(mock.requests.length, 0);
});

// ---- probes ----

test('/livez and /readyz answer 200 "ok" without a key', async () => {
  for (const path of ['/livez', '/readyz']) {
    const res = await fetch(gw.proxyUrl + path);
    assert.equal(res.status, 200, path);
    assert.equal(await res.text(), 'ok', path);
  }
});
