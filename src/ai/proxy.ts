// The proxy listener's request handler (spec 2 §4.1, §5, §7): routing table, the request
// phases (receive → authenticate → resolve → admit → dispatch → respond → finalize) and
// error rendering in the caller's envelope.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { GatewayError, isGatewayError } from '../lib/errors.ts';
import { RequestContext } from '../http/context.ts';
import { readBody } from '../http/body.ts';
import { sendBody, sendEmpty, sendJson } from '../http/respond.ts';
import type { ClientIpResolver } from '../http/real-ip.ts';
import { requestIdFrom } from '../http/request-id.ts';
import { hashKey, presentedKey } from '../auth/api-key.ts';
import type { Logger } from '../observability/logger.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { UsageSink } from '../observability/usage-events.ts';
import { createFinalizeSinks, reportRequest } from '../observability/access-log.ts';
import type { ApiKeyEntry, Snapshot, SnapshotHolder } from '../snapshot/snapshot.ts';
import { openAIErrorBody, parseChatRequest } from './protocols/openai-chat.ts';
import { dispatchChat, type UpstreamSettings } from './dispatch/chat.ts';

export interface Lifecycle {
  /** A configuration has been applied. */
  ready: boolean;
  /** Graceful shutdown has begun. */
  draining: boolean;
}

export interface ProxyOptions {
  snapshots: SnapshotHolder;
  lifecycle: Lifecycle;
  logger: Logger;
  metrics: Metrics;
  /** Where usage events go (one per model-serving request and per failed attempt). */
  usage: UsageSink;
  accessLog: boolean;
  bodyLimitBytes: number;
  requestIdHeaders: readonly string[];
  clientIp: ClientIpResolver;
  realIpHeader: string;
  upstream: UpstreamSettings;
}

type Handler = (ctx: RequestContext, options: ProxyOptions) => Promise<void> | void;

interface Route {
  readonly methods: ReadonlyMap<string, Handler>;
  readonly allow: string;
}

function route(handlers: Record<string, Handler>): Route {
  return { methods: new Map(Object.entries(handlers)), allow: Object.keys(handlers).join(', ') };
}

function probe(kind: 'livez' | 'readyz'): Handler {
  return (ctx, options) => {
    ctx.quiet = true;
    const { draining, ready } = options.lifecycle;
    const failing = draining ? 'shutting down' : kind === 'readyz' && !ready ? 'no configuration applied' : undefined;
    const headers = { 'x-content-type-options': 'nosniff' };
    if (failing === undefined) sendBody(ctx, 200, 'ok', 'text/plain; charset=utf-8', headers);
    else sendBody(ctx, 503, failing, 'text/plain; charset=utf-8', headers);
  };
}

const ROUTES = new Map<string, Route>([
  ['/livez', route({ GET: probe('livez'), HEAD: probe('livez') })],
  ['/readyz', route({ GET: probe('readyz'), HEAD: probe('readyz') })],
  ['/v1/models', route({ GET: listModels })],
  ['/v1/chat/completions', route({ POST: chatCompletions })],
]);

export function createProxyHandler(options: ProxyOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const sinks = createFinalizeSinks(options.logger, options.metrics, options.accessLog);
  return (req, res) => {
    // receive
    const ctx = new RequestContext(
      req,
      res,
      requestIdFrom(req.headers, options.requestIdHeaders),
      options.clientIp(req.socket.remoteAddress, req.headers[options.realIpHeader]),
    );
    options.metrics.inFlight.inc();
    res.once('close', () => {
      // finalize: exactly once, whatever happened.
      if (!res.writableFinished) {
        ctx.clientGone();
        ctx.status = 499;
        ctx.fail('client_disconnected', 'client disconnected before the response finished');
      }
      options.metrics.inFlight.dec();
      reportRequest(ctx, sinks);
    });
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const r = ROUTES.get(path);
    if (r === undefined) {
      ctx.fail('not_found', 'no route for path');
      sendEmpty(ctx, 404);
      return;
    }
    ctx.endpoint = path;
    const handler = r.methods.get(req.method ?? 'GET');
    if (handler === undefined) {
      fail(ctx, new GatewayError('method_not_allowed', `method ${req.method} is not allowed on ${path}`, { headers: { allow: r.allow }, publicCode: null }));
      return;
    }
    let out: Promise<void> | void;
    try {
      out = handler(ctx, options);
    } catch (err) {
      fail(ctx, err);
      return;
    }
    if (out !== undefined) out.catch((err: unknown) => fail(ctx, err));
  };
}

/** Answer with an error in the OpenAI envelope (or end a started response). */
function fail(ctx: RequestContext, err: unknown): void {
  const e = isGatewayError(err) ? err : new GatewayError('internal_error', 'internal gateway error', { cause: err });
  if (!isGatewayError(err)) ctx.fail('internal', err instanceof Error ? err.message : String(err));
  else ctx.fail(e.code, e.message);
  if (ctx.res.headersSent) {
    ctx.res.end();
    return;
  }
  sendJson(ctx, e.status, openAIErrorBody(e), e.headers);
}

function currentSnapshot(options: ProxyOptions): Snapshot {
  const snapshot = options.snapshots.current;
  if (snapshot === undefined) throw new GatewayError('shutting_down', 'no configuration has been applied yet');
  return snapshot;
}

/** authenticate: the caller's API key, or a 401. */
function authenticate(ctx: RequestContext, snapshot: Snapshot): ApiKeyEntry {
  const presented = presentedKey(ctx.req.headers);
  if (presented === undefined) throw new GatewayError('missing_api_key', 'Missing API key in request', { publicCode: 'missing_api_key' });
  const key = snapshot.apiKeysByHash.get(hashKey(presented));
  if (key === undefined) throw new GatewayError('invalid_api_key', 'Invalid API key', { publicCode: 'invalid_api_key' });
  ctx.apiKeyId = key.id;
  ctx.apiKeyName = key.name;
  if (key.disabled) throw new GatewayError('api_key_disabled', 'API key has been disabled');
  if (key.expiresAt !== undefined && key.expiresAt <= Date.now()) throw new GatewayError('api_key_expired', 'API key has expired');
  return key;
}

function listModels(ctx: RequestContext, options: ProxyOptions): void {
  const snapshot = currentSnapshot(options);
  const key = authenticate(ctx, snapshot);
  const created = Math.floor(snapshot.createdAt / 1000);
  const data = snapshot.visibleModels(key).map((m) => ({ id: m.name, object: 'model', created, owned_by: m.provider }));
  sendJson(ctx, 200, { object: 'list', data });
}

async function chatCompletions(ctx: RequestContext, options: ProxyOptions): Promise<void> {
  const snapshot = currentSnapshot(options);
  const key = authenticate(ctx, snapshot);
  const request = parseChatRequest(await readBody(ctx, options.bodyLimitBytes));
  ctx.stream = request.stream === true;
  const requested = request.model;
  // resolve: the allowlist is checked on the caller's own string, before existence, so a key
  // cannot probe for aliases it may not use.
  if (!snapshot.isModelAllowed(key, requested)) {
    throw new GatewayError('model_access_forbidden', `Access to model '${requested}' is forbidden`);
  }
  const resolved = snapshot.resolveModel(requested);
  if (resolved === undefined) {
    throw new GatewayError('model_not_found', `The model '${requested}' does not exist`);
  }
  const entry = resolved.entry;
  ctx.model = entry.name;
  ctx.provider = entry.provider;
  ctx.upstreamModel = resolved.upstreamModel;
  if (entry.kind === 'group') {
    throw new GatewayError('not_implemented', `model '${requested}' is a multi-target model group, which this gateway version cannot dispatch yet`);
  }
  const pk = entry.providerKey;
  if (pk === undefined || pk.adapter === undefined) {
    throw new GatewayError('provider_unavailable', `model '${requested}' has no usable provider: ${pk?.unavailable ?? 'provider key missing'}`);
  }
  const endpoint = pk.chat;
  if (endpoint === undefined || endpoint instanceof Error) {
    throw new GatewayError('provider_unavailable', `model '${requested}' cannot serve chat completions: ${endpoint?.message ?? 'no endpoint'}`);
  }
  // dispatch + respond
  await dispatchChat(ctx, resolved, pk.adapter, endpoint, request, options.upstream);
}
