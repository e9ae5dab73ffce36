// The handler in-process (real sockets, no spawned gateway): the admit and respond hooks, the
// single usage event per request, and the stages' claims, with an in-memory usage sink.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { RequestContext } from '../http/context.ts';
import { sendEmpty } from '../http/respond.ts';
import { MemoryUsageSink } from '../observability/usage-events.ts';
import { Snapshot } from '../snapshot/snapshot.ts';
import { handleHostStage, handlePathStage, type PassthroughOptions } from './handler.ts';
import { passthroughError } from './errors.ts';
import type { FinalOutcome, PassthroughHooks, ResponseFailure } from './hooks.ts';
import { sha256, snapshotOf } from './test-helpers.ts';

let upstream: http.Server;
let upstreamUrl: string;
let gateway: http.Server;
let gatewayUrl: string;
const usage = new MemoryUsageSink();
let hooks: PassthroughHooks = { admit: [], respond: [] };
let snapshot: Snapshot;
let upstreamHits = 0;

before(async () => {
  upstream = http.createServer((req, res) => {
    upstreamHits++;
    req.resume();
    req.on('end', () => {
      if (req.url?.startsWith('/big')) {
        // 17 MiB declared: over the buffer limit, so relayed as it arrives.
        const size = 17 * 1024 * 1024;
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': size });
        const piece = Buffer.alloc(1024 * 1024, 120);
        const pieces = req.url === '/big-break' ? 3 : 17;
        for (let i = 0; i < pieces; i++) res.write(piece);
        if (req.url === '/big-break') setTimeout(() => res.destroy(), 50);
        else res.end();
        return;
      }
      if (req.url?.startsWith('/stream')) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: {"n":1}\n\n');
        const t = setInterval(() => res.write('data: {"n":2}\n\n'), 50);
        res.on('close', () => clearInterval(t));
        setTimeout(() => {
          clearInterval(t);
          res.end('data: [DONE]\n\n');
        }, 400);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true,"usage":{"prompt_tokens":2}}');
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  snapshot = snapshotOf({
    api_keys: [{ display_name: 'k', key_hash: sha256('k'), allowed_models: [], allowed_routes: ['*'] }],
    passthrough_routes: [
      { name: 'r', path_prefix: '/r', target_url: upstreamUrl, provider_key: 'pk' },
      { name: 'h', hosts: ['h.example.com'], target_url: upstreamUrl, provider_key: 'pk' },
    ],
  });
  const options = (): PassthroughOptions => ({
    snapshots: { current: snapshot },
    usage,
    bodyLimitBytes: 1024,
    upstream: { timeoutMs: 5000, streamTimeoutMs: 0, connectTimeoutMs: 1000 },
    passthroughHooks: hooks,
  });
  gateway = http.createServer((req, res) => {
    const ctx = new RequestContext(req, res, randomUUID(), req.socket.remoteAddress ?? 'unknown');
    res.once('close', () => {
      if (!res.writableFinished) {
        ctx.clientGone();
        ctx.status = 499;
      }
    });
    const url = req.url ?? '/';
    if (handleHostStage(ctx, options(), url)) return;
    if (url === '/typed') {
      sendEmpty(ctx, 204);
      return;
    }
    if (handlePathStage(ctx, options(), url)) return;
    sendEmpty(ctx, 404);
  });
  await new Promise<void>((r) => gateway.listen(0, '127.0.0.1', r));
  gatewayUrl = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
});

after(async () => {
  gateway.closeAllConnections();
  upstream.closeAllConnections();
  await new Promise((r) => gateway.close(r));
  await new Promise((r) => upstream.close(r));
});

async function call(path: string, init: RequestInit = {}): Promise<{ status: number; text: string; rid: string }> {
  const res = await fetch(`${gatewayUrl}${path}`, { ...init, headers: { authorization: 'Bearer k', ...(init.headers as Record<string, string>) } });
  return { status: res.status, text: await res.text(), rid: res.headers.get('x-tollgate-request-id') ?? '' };
}

async function eventOf(rid: string) {
  for (let i = 0; i < 100; i++) {
    const found = usage.events.filter((e) => e.request_id === rid);
    if (found.length > 0) {
      await new Promise((r) => setTimeout(r, 20));
      assert.equal(usage.events.filter((e) => e.request_id === rid).length, 1, 'exactly one usage event');
      return found[0];
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`no usage event for ${rid}`);
}

test('unclaimed paths are left to the listener; typed paths are not taken by path routes', async () => {
  assert.equal((await call('/nope')).status, 404);
  assert.equal((await call('/typed')).status, 204);
});

test('with no admit checks the request is relayed and one usage event is emitted', async () => {
  hooks = { admit: [], respond: [] };
  const r = await call('/r/x', { method: 'POST', body: JSON.stringify({ model: 'm', messages: [] }) });
  assert.equal(r.status, 200);
  const e = await eventOf(r.rid);
  assert.equal(e.operation, 'passthrough');
  assert.equal(e.status, 200);
  assert.equal(e.prompt_tokens, 2);
  assert.equal(e.requested_model, 'm');
});

test('an admit check can refuse before dispatch; the upstream is not contacted', async () => {
  const hitsBefore = upstreamHits;
  let seen: { routeName: string; requestedModel: string; shape: string; keyName: string | undefined } | undefined;
  hooks = {
    admit: [(req) => {
      seen = { routeName: req.routeName, requestedModel: req.requestedModel, shape: req.shape, keyName: req.key.name };
      return { ok: false, error: passthroughError('route_access_forbidden', 'limited'), errorClass: 'rate_limited' };
    }],
    respond: [],
  };
  const r = await call('/r/x', { method: 'POST', body: JSON.stringify({ model: 'gpt-x', input: 'hi' }) });
  assert.equal(r.status, 403);
  assert.equal(JSON.parse(r.text).error.message, 'limited');
  assert.deepEqual(seen, { routeName: 'r', requestedModel: 'gpt-x', shape: 'responses', keyName: 'k' });
  assert.equal(upstreamHits, hitsBefore);
  const e = await eventOf(r.rid);
  assert.equal(e.status, 403);
  assert.equal(e.error_class, 'rate_limited');
  assert.equal(e.billable, false);
});

test('admitted holds are released once, with the recorded outcome', async () => {
  const released: FinalOutcome[] = [];
  hooks = { admit: [() => ({ ok: true, release: (o) => released.push(o) }), async () => ({ ok: true })], respond: [] };
  const r = await call('/r/x');
  assert.equal(r.status, 200);
  await eventOf(r.rid);
  assert.equal(released.length, 1);
  assert.equal(released[0].status, 200);
  assert.equal(released[0].stream, false);
});

test('a bound admission can end a running stream (a lost reservation): recorded with its status', async () => {
  let end: ((f: ResponseFailure) => void) | undefined;
  hooks = { admit: [() => ({ ok: true, bind: (e) => (end = e) })], respond: [] };
  const res = await fetch(`${gatewayUrl}/r/stream`, { headers: { authorization: 'Bearer k' } });
  const reader = res.body!.getReader();
  const first = await reader.read();
  assert.match(new TextDecoder().decode(first.value), /"n":1/);
  end!({ error: { code: 'rate_limit_lease_lost', status: 429, type: 'rate_limit_error', message: 'distributed concurrency lease was lost' }, errorClass: 'rate_limit_lease_lost' });
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  assert.equal(res.status, 200);
  assert.match(text, /event: error\ndata: .*distributed concurrency lease was lost/);
  const e = await eventOf(res.headers.get('x-tollgate-request-id')!);
  assert.equal(e.status, 429);
  assert.equal(e.error_class, 'rate_limit_lease_lost');
  assert.equal(e.error_message, 'distributed concurrency lease was lost');
});

test('a response filter can refuse a buffered body before delivery', async () => {
  let sawBody = '';
  hooks = {
    admit: [],
    respond: [(_req, status) => ({
      body: (s, body) => {
        sawBody = `${status}/${s}/${body?.toString()}`;
        return { error: { code: 'content_filter', status: 422, type: 'invalid_request_error', message: 'response blocked' }, errorClass: 'content_filter' };
      },
    })],
  };
  const r = await call('/r/x');
  assert.equal(r.status, 422);
  assert.equal(JSON.parse(r.text).error.code, 'content_filter');
  assert.equal(sawBody, '200/200/{"ok":true,"usage":{"prompt_tokens":2}}');
  assert.equal((await eventOf(r.rid)).status, 422);
});

test('a response filter can end an event stream after it started', async () => {
  let chunks = 0;
  hooks = {
    admit: [],
    respond: [() => ({
      chunk: () => (++chunks === 2 ? { error: { code: 'content_filter', status: 200, type: 'content_filter', message: 'blocked' }, errorClass: 'content_filter' } : undefined),
    })],
  };
  const res = await fetch(`${gatewayUrl}/r/stream`, { headers: { authorization: 'Bearer k' } });
  const text = await res.text();
  assert.equal(res.status, 200);
  assert.ok(text.startsWith('data: {"n":1}\n\n'));
  assert.match(text, /event: error\ndata: \{"error":\{"message":"blocked","type":"content_filter"/);
  const e = await eventOf(res.headers.get('x-tollgate-request-id')!);
  assert.equal(e.error_class, 'content_filter');
});

test('the host stage claims by Host before any typed path', async () => {
  hooks = { admit: [], respond: [] };
  // fetch cannot set Host; node:http can.
  const status = await new Promise<number>((resolve, reject) => {
    const req = http.request(`${gatewayUrl}/typed`, { headers: { host: 'h.example.com', authorization: 'Bearer k' } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.once('error', reject);
    req.end();
  });
  assert.equal(status, 200);
});

test('a body over the limit is a 413 in the envelope, recorded once', async () => {
  hooks = { admit: [], respond: [] };
  const r = await call('/r/x', { method: 'POST', body: 'x'.repeat(2000) });
  assert.equal(r.status, 413);
  assert.equal(JSON.parse(r.text).error.code, 'request_too_large');
  assert.equal((await eventOf(r.rid)).status, 413);
});

test('an inject route whose provider key is gone fails closed with 503', async () => {
  const saved = snapshot;
  const resources = structuredClone(saved.resources);
  resources.provider_keys = [];
  snapshot = new Snapshot(resources, 2, 1);
  try {
    const hitsBefore = upstreamHits;
    const r = await call('/r/x');
    assert.equal(r.status, 503);
    assert.equal(JSON.parse(r.text).error.code, 'route_unavailable');
    assert.equal(upstreamHits, hitsBefore);
    assert.equal((await eventOf(r.rid)).error_class, 'config');
  } finally {
    snapshot = saved;
  }
});

test('a body over the buffer limit is relayed as it arrives, whole', async () => {
  hooks = { admit: [], respond: [] };
  const res = await fetch(`${gatewayUrl}/r/big`, { headers: { authorization: 'Bearer k' } });
  assert.equal(res.headers.get('content-length'), String(17 * 1024 * 1024));
  const body = Buffer.from(await res.arrayBuffer());
  assert.equal(body.length, 17 * 1024 * 1024);
  assert.equal((await eventOf(res.headers.get('x-tollgate-request-id')!)).status, 200);
});

test('a large body that breaks after its head cuts the caller and is recorded 502', async () => {
  hooks = { admit: [], respond: [] };
  const res = await fetch(`${gatewayUrl}/r/big-break`, { headers: { authorization: 'Bearer k' } });
  const rid = res.headers.get('x-tollgate-request-id')!;
  await assert.rejects(res.arrayBuffer());
  const e = await eventOf(rid);
  assert.equal(e.status, 502);
  assert.equal(e.error_class, 'transport');
});
