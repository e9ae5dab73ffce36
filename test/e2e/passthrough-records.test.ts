// E2E, spec 2 §6.1 and spec 3 §3/§6: every record of a pass-through request says the same thing.
// The usage event, the access line and the metrics carry one status, one error class and one set
// of token counts, also when the answer is decided after its head (a large body cut, an in-band
// error the caller left at, an upstream error stream the caller left) or only once a compressed
// body has been decoded on the side.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { startGateway, type Gateway } from '../harness/spawn.ts';
import { testConfig } from '../harness/proxy-fixture.ts';
import { waitForLines } from '../harness/log-lines.ts';

const KEY = 'sk-pt-records';
let gw: Gateway;
let upstream: http.Server;

const sse = (...frames: string[]): string => frames.map((f) => `${f}\n\n`).join('');
const DELTA = `data: ${JSON.stringify({ choices: [{ delta: { content: 'hi' } }] })}`;
const RATE_LIMITED = `event: error\ndata: ${JSON.stringify({ error: { type: 'rate_limit_error', message: 'slow down' } })}`;
const COMPLETION = { id: 'c', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }] };
const MIB = 1024 * 1024;

/** What the upstream does, by the last path segment of the request. */
const SCRIPTS: Record<string, (res: http.ServerResponse) => void> = {
  // 17 MiB of a declared 20 MiB (past the buffering limit, so the head is out), then a break or a stall.
  'big-break': (res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(20 * MIB) });
    for (let i = 0; i < 17; i++) res.write(Buffer.alloc(MIB, 97));
    setTimeout(() => res.socket?.destroy(), 200);
  },
  'big-stall': (res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(20 * MIB) });
    for (let i = 0; i < 17; i++) res.write(Buffer.alloc(MIB, 97));
  },
  // An in-band error event, the stream then held open: the caller leaves at the error frame.
  'inband-hold': (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(sse(DELTA, RATE_LIMITED));
  },
  'inband-gzip': (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' });
    res.end(gzipSync(sse(DELTA, RATE_LIMITED)));
  },
  'json-gzip': (res) => {
    const body = gzipSync(JSON.stringify({ ...COMPLETION, usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 } }));
    res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': String(body.length) });
    res.end(body);
  },
  'sse-gzip': (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' });
    res.end(gzipSync(sse(DELTA, `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 13, completion_tokens: 5, total_tokens: 18 } })}`, 'data: [DONE]')));
  },
  // An error status on an event stream, one frame, then held open: the caller leaves.
  'error-stream-hold': (res) => {
    res.writeHead(500, { 'content-type': 'text/event-stream' });
    res.write(sse('data: {"x":1}'));
  },
};

before(async () => {
  upstream = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const script = SCRIPTS[(req.url ?? '').split('/').pop() ?? ''];
      if (script === undefined) res.writeHead(404).end();
      else script(res);
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const target = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  gw = await startGateway({
    config: testConfig(),
    resources: {
      _format_version: '1',
      provider_keys: [{ display_name: 'up', provider: 'openai', api_key: 'sk-provider' }],
      api_keys: [{ display_name: 'caller', key_env: 'PT_KEY', allowed_models: [], allowed_routes: ['*'] }],
      passthrough_routes: [
        { name: 'r', path_prefix: '/passthrough/r', target_url: target, provider_key: 'up' },
        { name: 'slow', path_prefix: '/passthrough/slow', target_url: target, provider_key: 'up', timeout_ms: 1500 },
      ],
    },
    env: { PT_KEY: KEY },
  });
});

after(async () => {
  await gw?.stop();
  upstream?.closeAllConnections();
  upstream?.close();
});

/**
 * POST to `path` with request id `id`; with `leaveAt`, the caller disconnects once the reply
 * holds that text (as the SDKs stop reading at an error frame). A cut connection is an answer too.
 */
function send(path: string, id: string, leaveAt?: string): Promise<void> {
  return new Promise((resolve) => {
    const url = new URL(gw.proxyUrl);
    const body = JSON.stringify({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    const req = http.request({
      host: url.hostname, port: Number(url.port), path, method: 'POST', agent: false,
      headers: { authorization: `Bearer ${KEY}`, 'x-tollgate-request-id': id, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => {
        if (leaveAt === undefined) return;
        text += c.toString('latin1');
        if (text.includes(leaveAt)) {
          req.destroy();
          resolve();
        }
      });
      res.on('end', () => resolve());
      res.on('aborted', () => resolve());
      res.on('error', () => resolve());
    });
    req.on('error', () => resolve());
    req.end(body);
  });
}

interface Sample { labels: string; value: number }

async function samples(name: string): Promise<Sample[]> {
  const text = await (await fetch(`${gw.metricsUrl}/metrics`)).text();
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    const m = /^(\w+)\{(.*)\} (\S+)$/.exec(line);
    if (m !== null && m[1] === name) out.push({ labels: m[2], value: Number(m[3]) });
  }
  return out;
}

const PASSTHROUGH = { endpoint: '/passthrough_route' };
/** Token counters label pass-through by route name (provider) and `passthrough` (model). */
const ROUTE_R = { provider: 'r', model: 'passthrough' };

/** The sum of `name`'s samples whose labels hold every `key="value"` given. */
async function total(name: string, match: Record<string, string>): Promise<number> {
  const want = Object.entries(match).map(([k, v]) => `${k}="${v}"`);
  return (await samples(name)).filter((s) => want.every((w) => s.labels.includes(w))).reduce((a, s) => a + s.value, 0);
}

/** The request's usage event and access line, once both are written. */
async function records(id: string): Promise<{ usage: any; access: any }> {
  const [usage] = await waitForLines(gw, 'usage', (l) => l.request_id === id, 1, 8000);
  const [access] = await waitForLines(gw, 'access', (l) => l.request_id === id, 1, 8000);
  assert.ok(usage !== undefined && access !== undefined, `${id}: a usage event and an access line`);
  return { usage, access };
}

/** Sends, then checks the status and error class of both records and the requests counter. */
async function recordedAs(path: string, id: string, status: number, errorClass: string | null, leaveAt?: string): Promise<{ usage: any; access: any }> {
  const counted = await total('tollgate_proxy_requests_total', { ...PASSTHROUGH, status: String(status) });
  await send(path, id, leaveAt);
  const r = await records(id);
  assert.deepEqual([r.usage.status, r.usage.error_class], [status, errorClass], `${id}: usage event`);
  assert.deepEqual([r.access.status, r.access.error_kind ?? null], [status, errorClass], `${id}: access line`);
  assert.equal(await total('tollgate_proxy_requests_total', { ...PASSTHROUGH, status: String(status) }), counted + 1, `${id}: tollgate_proxy_requests_total{status="${status}"}`);
  return r;
}

test('a large body cut after its head by an upstream break: 502 transport in every record', async () => {
  const failed = await total('tollgate_proxy_failed_requests_total', { ...PASSTHROUGH, status: '502' });
  await recordedAs('/passthrough/r/big-break', 'pt-rec-break', 502, 'transport');
  assert.equal(await total('tollgate_proxy_failed_requests_total', { ...PASSTHROUGH, status: '502' }), failed + 1);
});

test('a large body cut after its head by the route timeout: 504 timeout in every record', async () => {
  await recordedAs('/passthrough/slow/big-stall', 'pt-rec-stall', 504, 'timeout');
});

test('an in-band error event the caller leaves at: its own status, not 499, in every record', async () => {
  const r = await recordedAs('/passthrough/r/inband-hold', 'pt-rec-inband-leave', 429, 'upstream_in_band', 'rate_limit_error');
  assert.equal(r.usage.billable, false);
  assert.equal(r.access.error, r.usage.error_message);
});

test('an in-band error event in a compressed stream, read on the side: 429 in every record', async () => {
  await recordedAs('/passthrough/r/inband-gzip', 'pt-rec-inband-gzip', 429, 'upstream_in_band');
});

test('an upstream error status on a stream the caller leaves: the upstream status in every record', async () => {
  await recordedAs('/passthrough/r/error-stream-hold', 'pt-rec-500-leave', 500, 'upstream_status', 'data:');
});

for (const [script, prompt, completion] of [['json-gzip', 11, 7], ['sse-gzip', 13, 5]] as const) {
  test(`tokens of a compressed ${script === 'json-gzip' ? 'body' : 'stream'}: in the access line and the token counter as in the usage event`, async () => {
    const input = await total('tollgate_tokens_consumed_total', { ...ROUTE_R, token_type: 'input' });
    const output = await total('tollgate_tokens_consumed_total', { ...ROUTE_R, token_type: 'output' });
    const { usage, access } = await recordedAs(`/passthrough/r/${script}`, `pt-rec-${script}`, 200, null);
    assert.deepEqual([usage.prompt_tokens, usage.completion_tokens], [prompt, completion]);
    assert.deepEqual([access.prompt_tokens, access.completion_tokens, access.total_tokens], [prompt, completion, 18]);
    assert.equal(await total('tollgate_tokens_consumed_total', { ...ROUTE_R, token_type: 'input' }), input + prompt);
    assert.equal(await total('tollgate_tokens_consumed_total', { ...ROUTE_R, token_type: 'output' }), output + completion);
  });
}
