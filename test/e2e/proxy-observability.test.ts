// E2E: what the proxy listener tells operators and callers about each request: the
// x-tollgate-request-id header (minted or adopted, and passed upstream), the access log on
// stderr (spec 2 §6.2: one line per answered request, never a credential) and the
// tollgate_requests_total metric.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Gateway } from '../harness/spawn.ts';
import { useProxyFixture } from '../harness/proxy-fixture.ts';
import { chatChunks, type MockUpstream } from '../harness/mock-upstream.ts';

const CALLER_KEY = 'sk-e2e-obs-caller-0f5c19';
const WRONG_KEY = 'sk-e2e-obs-wrong-key-77aa';
const UPSTREAM_SECRET = 'sk-upstream-secret';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let mock: MockUpstream;
let gw: Gateway;

useProxyFixture({
  config: { upstream: { retries: 0 }, proxy: { request_id: { accept_headers: ['X-Request-Id', 'x-tollgate-request-id'] } } },
  resources: (mockUrl) => ({
    _format_version: '1',
    provider_keys: [{ display_name: 'up', provider: 'openai', api_key: UPSTREAM_SECRET, api_base: `${mockUrl}/v1` }],
    models: [
      { display_name: 'fast', provider: 'openai', model_name: 'gpt-4o-mini', provider_key: 'up' },
      { display_name: 'other', provider: 'openai', model_name: 'gpt-4o', provider_key: 'up' },
    ],
    api_keys: [{ display_name: 'caller', key_env: 'E2E_OBS_KEY', allowed_models: ['fast'] }],
  }),
  env: { E2E_OBS_KEY: CALLER_KEY },
  ready: (fx) => ({ mock, gw } = fx),
});

const hi = [{ role: 'user', content: 'hi' }];

function request(path: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}): Promise<Response> {
  const headers: Record<string, string> = { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers };
  return fetch(gw.proxyUrl + path, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
}

function chat(headers: Record<string, string> = {}, body: unknown = { model: 'fast', messages: hi }): Promise<Response> {
  return request('/v1/chat/completions', { headers: { authorization: `Bearer ${CALLER_KEY}`, ...headers }, body });
}

async function waitFor<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 5000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function accessLines(): any[] {
  const out: any[] = [];
  for (const line of gw.stderrText().split('\n')) {
    if (!line.startsWith('{')) continue;
    const parsed = JSON.parse(line);
    if (parsed.type === 'access') out.push(parsed);
  }
  return out;
}

// ---- request id ----

test('every answer carries x-tollgate-request-id, errors included; each is fresh', async () => {
  const answers: Array<[string, number, () => Promise<Response>]> = [
    ['chat', 200, () => chat()],
    ['stream', 200, () => {
      mock.script({ sse: chatChunks() });
      return chat({}, { model: 'fast', messages: hi, stream: true });
    }],
    ['models', 200, () => request('/v1/models', { headers: { authorization: `Bearer ${CALLER_KEY}` } })],
    ['no key', 401, () => request('/v1/chat/completions', { body: { model: 'fast', messages: hi } })],
    ['forbidden', 403, () => chat({}, { model: 'other', messages: hi })],
    ['unrouted', 404, () => request('/nowhere')],
    ['wrong method', 405, () => request('/v1/chat/completions')],
    ['bad role', 400, () => chat({}, { model: 'fast', messages: [{ role: 'Robot', content: 'x' }] })],
    ['upstream down', 502, () => {
      mock.script({ status: 503, body: 'down' });
      return chat();
    }],
  ];
  const seen = new Set<string>();
  for (const [what, status, send] of answers) {
    const res = await send();
    await res.arrayBuffer();
    assert.equal(res.status, status, what);
    const id = res.headers.get('x-tollgate-request-id');
    assert.ok(id, `${what}: x-tollgate-request-id missing`);
    assert.match(id, UUID, what);
    assert.ok(!seen.has(id), `${what}: request id reused`);
    seen.add(id);
  }
});

test('the upstream receives the request id the caller sees', async () => {
  const res = await chat();
  await res.arrayBuffer();
  assert.equal(res.status, 200);
  assert.equal(mock.requests[0].headers['x-tollgate-request-id'], res.headers.get('x-tollgate-request-id'));
});

test('a caller-supplied x-tollgate-request-id is adopted and sent upstream', async () => {
  const id = 'e2e-caller-request-0001';
  const res = await chat({ 'x-tollgate-request-id': id });
  await res.arrayBuffer();
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-tollgate-request-id'), id);
  assert.equal(mock.requests[0].headers['x-tollgate-request-id'], id);
  // Adopted on refusals too.
  const refused = await request('/v1/chat/completions', { headers: { 'x-tollgate-request-id': 'e2e-caller-request-0002' }, body: { model: 'fast', messages: hi } });
  await refused.arrayBuffer();
  assert.equal(refused.status, 401);
  assert.equal(refused.headers.get('x-tollgate-request-id'), 'e2e-caller-request-0002');
});

test('proxy.request_id.accept_headers: the first listed header present names the request, upstream too', async () => {
  const res = await chat({ 'x-request-id': 'e2e-from-x-request-id', 'x-tollgate-request-id': 'e2e-second-choice' });
  await res.arrayBuffer();
  assert.equal(res.headers.get('x-tollgate-request-id'), 'e2e-from-x-request-id');
  assert.equal(mock.requests[0].headers['x-tollgate-request-id'], 'e2e-from-x-request-id');
  const second = await chat({ 'x-tollgate-request-id': 'e2e-second-choice' });
  await second.arrayBuffer();
  assert.equal(second.headers.get('x-tollgate-request-id'), 'e2e-second-choice');
});

test('upstream connections are kept alive: sequential requests share one connection', async () => {
  for (let i = 0; i < 3; i++) {
    const res = await chat();
    await res.arrayBuffer();
    assert.equal(res.status, 200);
  }
  const ports = new Set(mock.requests.map((r) => r.remotePort));
  assert.equal(ports.size, 1, `upstream client ports: ${[...ports].join(', ')}`);
});

test('an invalid caller request id (too long, or with spaces) is replaced, also upstream', async () => {
  for (const bad of ['r'.repeat(257), 'has a space']) {
    mock.reset();
    const res = await chat({ 'x-tollgate-request-id': bad });
    await res.arrayBuffer();
    assert.equal(res.status, 200);
    const id = res.headers.get('x-tollgate-request-id');
    assert.notEqual(id, bad);
    assert.match(id ?? '', UUID);
    assert.equal(mock.requests[0].headers['x-tollgate-request-id'], id);
  }
});

// ---- access log ----

test('one access-log line per answered request, 401/403/404/405 included, none for the probes', async () => {
  const tag = `e2e-log-${Date.now()}`;
  const cases: Array<{ id: string; send: (h: Record<string, string>) => Promise<Response>; status: number; path: string }> = [
    { id: `${tag}-ok`, send: (h) => chat(h), status: 200, path: '/v1/chat/completions' },
    { id: `${tag}-models`, send: (h) => request('/v1/models', { headers: { authorization: `Bearer ${CALLER_KEY}`, ...h } }), status: 200, path: '/v1/models' },
    { id: `${tag}-missing`, send: (h) => request('/v1/chat/completions', { headers: h, body: { model: 'fast', messages: hi } }), status: 401, path: '/v1/chat/completions' },
    { id: `${tag}-invalid`, send: (h) => chat({ authorization: `Bearer ${WRONG_KEY}`, ...h }), status: 401, path: '/v1/chat/completions' },
    { id: `${tag}-forbidden`, send: (h) => chat(h, { model: 'other', messages: hi }), status: 403, path: '/v1/chat/completions' },
    { id: `${tag}-unrouted`, send: (h) => request('/v2/whatever', { headers: h }), status: 404, path: '' },
    { id: `${tag}-method`, send: (h) => request('/v1/chat/completions', { method: 'DELETE', headers: h }), status: 405, path: '/v1/chat/completions' },
  ];
  for (const c of cases) {
    const res = await c.send({ 'x-tollgate-request-id': c.id });
    await res.arrayBuffer();
    assert.equal(res.status, c.status, c.id);
  }
  const probeIds = [`${tag}-livez`, `${tag}-readyz`];
  for (const [i, path] of ['/livez', '/readyz'].entries()) {
    const res = await request(path, { headers: { 'x-tollgate-request-id': probeIds[i] } });
    assert.equal(await res.text(), 'ok');
    // The probe paths are never logged, a method they do not take included.
    const id = `${probeIds[i]}-post`;
    probeIds.push(id);
    const refused = await request(path, { method: 'POST', headers: { 'x-tollgate-request-id': id } });
    await refused.arrayBuffer();
    assert.equal(refused.status, 405);
  }
  // A last request after the probes: once its line is out, the probes' lines would be too.
  const marker = `${tag}-marker`;
  await (await chat({ 'x-tollgate-request-id': marker })).arrayBuffer();
  await waitFor('the marker access line', () => (accessLines().some((l) => l.request_id === marker) ? true : undefined));

  const lines = accessLines();
  for (const c of cases) {
    const mine = lines.filter((l) => l.request_id === c.id);
    assert.equal(mine.length, 1, `${c.id}: ${mine.length} access lines`);
    assert.equal(mine[0].status, c.status, c.id);
    if (c.path !== '') assert.equal(mine[0].path, c.path, c.id);
  }
  for (const id of probeIds) assert.equal(lines.filter((l) => l.request_id === id).length, 0, `${id} must not be logged`);
  const ok = lines.find((l) => l.request_id === `${tag}-ok`);
  assert.equal(ok.model, 'fast');
  assert.equal(ok.upstream_model, 'gpt-4o-mini');
  assert.equal(ok.api_key_name, 'caller');
  assert.ok(ok.request_body_bytes > 0);
  assert.ok(ok.response_body_bytes > 0);
});

test('stderr never contains a presented credential or the upstream api_key', async () => {
  const marker = `e2e-secrets-${Date.now()}`;
  const sends = [
    chat({ authorization: `Bearer ${CALLER_KEY}` }),
    chat({ authorization: CALLER_KEY }),
    request('/v1/chat/completions', { headers: { 'x-api-key': CALLER_KEY }, body: { model: 'fast', messages: hi } }),
    chat({ authorization: `Bearer ${WRONG_KEY}` }),
    request('/v1/chat/completions', { headers: { 'x-api-key': WRONG_KEY }, body: { model: 'fast', messages: hi } }),
    request('/v1/models', { headers: { authorization: WRONG_KEY } }),
    request('/nowhere', { headers: { authorization: `Bearer ${CALLER_KEY}` } }),
  ];
  for (const p of sends) await (await p).arrayBuffer();
  mock.script({ status: 401, json: { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } } });
  await (await chat()).arrayBuffer();
  await (await chat({ 'x-tollgate-request-id': marker })).arrayBuffer();
  await waitFor('the marker access line', () => (accessLines().some((l) => l.request_id === marker) ? true : undefined));
  const stderr = gw.stderrText();
  for (const secret of [CALLER_KEY, WRONG_KEY, UPSTREAM_SECRET]) {
    assert.ok(!stderr.includes(secret), `stderr contains ${secret}`);
  }
});

// ---- metrics ----

/** Sum of tollgate_requests_total samples whose labels include `match`. */
async function requestsTotal(match: Record<string, string>): Promise<number> {
  const res = await fetch(`${gw.metricsUrl}/metrics`);
  assert.equal(res.status, 200);
  const text = await res.text();
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^tollgate_requests_total\{(.*)\} (\S+)$/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...m[1].matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(match).every(([k, v]) => labels[k] === v)) sum += Number(m[2]);
  }
  return sum;
}

test('tollgate_requests_total counts the requests made, by status', async () => {
  assert.ok(gw.metricsUrl, 'metrics listener');
  const ok = { endpoint: '/v1/chat/completions', model: 'fast', status: '200' };
  const unauthorized = { endpoint: '/v1/chat/completions', status: '401' };
  const okBefore = await requestsTotal(ok);
  const unauthorizedBefore = await requestsTotal(unauthorized);
  for (let i = 0; i < 3; i++) await (await chat()).arrayBuffer();
  await (await request('/v1/chat/completions', { body: { model: 'fast', messages: hi } })).arrayBuffer();
  await (await chat({ authorization: `Bearer ${WRONG_KEY}` })).arrayBuffer();
  await waitFor('the counters to move', async () => ((await requestsTotal(ok)) - okBefore >= 3 ? true : undefined));
  // Settle: a late extra count would show up now.
  await new Promise((r) => setTimeout(r, 100));
  assert.equal((await requestsTotal(ok)) - okBefore, 3);
  assert.equal((await requestsTotal(unauthorized)) - unauthorizedBefore, 2);
});
