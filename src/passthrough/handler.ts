// The pass-through data plane's entry points, called by the proxy listener: the host stage
// (before the typed routes) and the path stage (after them, before the 404). Each returns true
// when a route claimed the request and this module now answers it.
//
// Phases per request: authenticate (source_cidrs, gateway credential, route grant) → resolve
// (credential and target path) → read the body and detect its shape → admit (registered checks)
// → dispatch (exactly one upstream attempt: no retry, no cooldown) → respond (relay with the
// usage tap) → finalize (the usage event, see exchange.ts).
import { performance } from 'node:perf_hooks';
import type { RequestContext } from '../http/context.ts';
import { readBody } from '../http/body.ts';
import { callUpstream } from '../http/upstream.ts';
import type { UsageSink } from '../observability/usage-events.ts';
import type { Logger } from '../observability/logger.ts';
import type { Snapshot } from '../snapshot/snapshot.ts';
import { authenticateRoute } from './authenticate.ts';
import { boundedIdentity } from './client-identity.ts';
import { routesFor, type CompiledRoutes } from './compile-routes.ts';
import { passthroughError, toPassthroughError } from './errors.ts';
import { PassthroughExchange } from './exchange.ts';
import { NO_HOOKS, type AdmitRequest, type PassthroughHooks, type ResponseFilter } from './hooks.ts';
import { normalizeHost } from './host.ts';
import { matchHostStage, matchPathStage, type RouteMatch } from './match-route.ts';
import { relayBody } from './relay-body.ts';
import { isEventStream, relayEventStream } from './relay-event-stream.ts';
import { upstreamRequestHeaders } from './request-headers.ts';
import { detectRequest } from './request-shape.ts';
import { upstreamPath } from './target-path.ts';
import { exchangeTimeoutMs } from './timeout.ts';
import { parseTraceparent } from './trace-context.ts';
import { preserveHostEndpoint } from './upstream-endpoint.ts';

/** What the handler needs from the proxy listener's options. */
export interface PassthroughOptions {
  readonly snapshots: { readonly current: Snapshot | undefined };
  readonly usage: UsageSink;
  readonly bodyLimitBytes: number;
  readonly upstream: { readonly timeoutMs: number; readonly streamTimeoutMs: number; readonly connectTimeoutMs: number };
  /** Admit checks and response filters (limits, budgets, guardrails); none by default. */
  readonly passthroughHooks?: PassthroughHooks;
  /** Where a failed finalize is reported (it never ends the process). */
  readonly logger?: Pick<Logger, 'error'>;
}

/** Metrics and access-log label of every pass-through request (a template, not the raw path). */
export const PASSTHROUGH_ENDPOINT = '/passthrough_route';

interface Target {
  /** Host from the request target (absolute form) or the Host header, normalized. */
  host: string;
  path: string;
  query: string;
}

/** Split a request target: origin form `/p?q`, or absolute form `http://host/p?q` (forward proxies). */
function parseTarget(url: string, hostHeader: string | undefined): Target {
  let rest = url;
  let host = hostHeader;
  if (url.charCodeAt(0) !== 47) {
    const scheme = url.indexOf('://');
    if (scheme > 0) {
      const from = scheme + 3;
      let end = from;
      while (end < url.length && url.charCodeAt(end) !== 47 && url.charCodeAt(end) !== 63) end++;
      host = url.slice(from, end);
      const at = host.lastIndexOf('@');
      if (at >= 0) host = host.slice(at + 1);
      rest = end < url.length ? url.slice(end) : '/';
      if (rest.charCodeAt(0) === 63) rest = `/${rest}`;
    }
  }
  const q = rest.indexOf('?');
  return { host: normalizeHost(host), path: q < 0 ? rest : rest.slice(0, q), query: q < 0 ? '' : rest.slice(q + 1) };
}

/** Host stage: a route whose hosts match the request claims it before the typed routes. */
export function handleHostStage(ctx: RequestContext, options: PassthroughOptions, url: string): boolean {
  const snapshot = options.snapshots.current;
  if (snapshot === undefined || snapshot.resources.passthrough_routes.length === 0) return false;
  const routes = routesFor(snapshot);
  if (routes.hostExact.size === 0 && routes.hostWildcard.size === 0) return false;
  const target = parseTarget(url, ctx.req.headers.host);
  const match = matchHostStage(routes, target.host, target.path);
  if (match === undefined) return false;
  start(ctx, options, snapshot, routes, match, target);
  return true;
}

/** Path stage: a path-only route claims a path no typed route served. */
export function handlePathStage(ctx: RequestContext, options: PassthroughOptions, url: string): boolean {
  const snapshot = options.snapshots.current;
  if (snapshot === undefined || snapshot.resources.passthrough_routes.length === 0) return false;
  const routes = routesFor(snapshot);
  const target = parseTarget(url, ctx.req.headers.host);
  const match = matchPathStage(routes, target.host, target.path);
  if (match === undefined) return false;
  start(ctx, options, snapshot, routes, match, target);
  return true;
}

function start(ctx: RequestContext, options: PassthroughOptions, snapshot: Snapshot, routes: CompiledRoutes, match: RouteMatch, target: Target): void {
  const x = new PassthroughExchange(ctx, match.route, match.host, options.usage);
  ctx.endpoint = PASSTHROUGH_ENDPOINT;
  ctx.provider = match.route.name;
  ctx.model = 'passthrough';
  ctx.upstreamModelLabel = 'passthrough';
  const credential = match.route.credential;
  if (credential.mode === 'inject') {
    ctx.providerKeyId = credential.providerKeyId;
    ctx.providerKeyName = credential.providerKeyName;
  }
  // An exception in finalize would be uncaught (an event handler, or a promise callback) and end
  // the process: whatever a request carried, it costs at most its own records.
  const finalizeFailed = (err: unknown): void => {
    options.logger?.error({ request_id: ctx.requestId, err: err instanceof Error ? err.message : String(err) }, 'request finalize failed');
  };
  x.onFinalizeError = finalizeFailed;
  ctx.res.once('close', () => {
    try {
      x.finalize();
    } catch (err) {
      finalizeFailed(err);
    }
  });
  run(x, options, snapshot, routes, match, target).catch((err: unknown) => {
    if (ctx.res.headersSent) {
      x.record(500, 'internal', err instanceof Error ? err.message : String(err));
      ctx.res.destroy();
      return;
    }
    const e = toPassthroughError(err);
    x.answerError(e, e.code === 'internal_error' ? 'internal' : e.code);
  });
}

async function run(
  x: PassthroughExchange,
  options: PassthroughOptions,
  snapshot: Snapshot,
  routes: CompiledRoutes,
  match: RouteMatch,
  target: Target,
): Promise<void> {
  const { ctx, route } = x;
  const headers = ctx.req.headers;
  if (route.identityHeader !== undefined) x.clientIdentity = boundedIdentity(headers[route.identityHeader]);
  x.traceId = parseTraceparent(headers.traceparent)?.traceId;

  // authenticate
  const auth = authenticateRoute(route, routes, snapshot, headers, ctx.clientIp);
  x.key = auth.key;
  if (auth.key !== undefined) {
    ctx.apiKeyId = auth.key.id;
    ctx.apiKeyName = auth.key.name;
    ctx.apiKeyTeam = auth.key.doc.team_id;
    ctx.apiKeyUser = auth.key.doc.user_name ?? auth.key.doc.user_id;
  }
  if (!auth.ok) {
    x.answerError(auth.error);
    return;
  }

  // resolve
  const credential = route.credential;
  if (credential.mode === 'unavailable') {
    x.answerError(passthroughError('route_unavailable', `pass-through route ${JSON.stringify(route.name)} cannot be served: ${credential.reason}`), 'config');
    return;
  }
  if (route.target instanceof Error) {
    x.answerError(passthroughError('route_unavailable', `pass-through route ${JSON.stringify(route.name)} cannot be served: ${route.target.message}`), 'config');
    return;
  }
  const path = upstreamPath(route, route.target, match.prefixMatched, target.path, target.query);
  if (typeof path !== 'string') {
    x.answerError(path);
    return;
  }

  // The body is relayed as received; it is read whole for the usage shape and the admit checks.
  const body = await readBody(ctx, options.bodyLimitBytes);
  const detected = detectRequest(body);
  x.shape = detected.shape;
  x.requestedModel = detected.model;
  if (detected.model !== '') {
    ctx.requestedModel = detected.model;
    ctx.upstreamModel = detected.model;
  }

  // admit
  const hooks = options.passthroughHooks ?? NO_HOOKS;
  const request: AdmitRequest = {
    ctx,
    snapshot,
    routeId: route.id,
    routeName: route.name,
    credentialMode: credential.mode,
    providerKeyId: credential.mode === 'inject' ? credential.providerKeyId : undefined,
    key: auth.key,
    body,
    shape: detected.shape,
    requestedModel: detected.model,
  };
  for (const check of hooks.admit) {
    const admitted = await check(request);
    if (!admitted.ok) {
      x.answerError(admitted.error, admitted.errorClass);
      return;
    }
    if (admitted.release !== undefined) x.onFinal(admitted.release);
    admitted.bind?.((failure) => x.end(failure));
  }
  if (ctx.clientDisconnected) return;

  // dispatch: one attempt.
  const outHeaders = upstreamRequestHeaders(route.headers, ctx.req.rawHeaders, ctx.requestId, auth.gatewayKey);
  if (body.length > 0 || headers['content-length'] !== undefined || headers['transfer-encoding'] !== undefined) {
    outHeaders['content-length'] = body.length;
  }
  const tls = credential.mode === 'inject' ? credential.tls : undefined;
  const base = route.target === undefined ? preserveHostEndpoint(x.host, tls) : route.target.endpoint;
  const timeoutMs = exchangeTimeoutMs(route.timeoutMs, options.upstream);
  const sentAt = performance.now();
  ctx.upstreamSentMs = sentAt - ctx.startedAt;
  x.dispatched = true;
  const result = await callUpstream({
    endpoint: { ...base, path },
    method: ctx.req.method ?? 'GET',
    headers: outHeaders,
    body: body.length > 0 ? body : undefined,
    connectTimeoutMs: options.upstream.connectTimeoutMs,
    headersTimeoutMs: timeoutMs,
    cancel: x.upstreamCancel(),
  });
  if (!result.ok) {
    if (result.kind === 'aborted') {
      const lost = x.takePendingEnd();
      if (lost !== undefined) x.answerError(lost.error, lost.errorClass);
      return; // otherwise the caller left; finalize records 499
    }
    if (result.kind === 'timeout') x.answerError(passthroughError('upstream_timeout', result.message), 'timeout');
    else x.answerError(passthroughError('upstream_transport', result.message), 'transport');
    return;
  }

  // respond
  const response = result.response;
  const status = response.statusCode ?? 502;
  if (status >= 400) x.fail('upstream_status', `upstream returned ${status}`);
  const filters: ResponseFilter[] = [];
  for (const hook of hooks.respond) {
    const f = hook(request, status);
    if (f !== undefined) filters.push(f);
  }
  const early = x.takePendingEnd();
  if (early !== undefined) {
    response.destroy();
    x.answerError(early.error, early.errorClass);
    return;
  }
  if (isEventStream(response.headers['content-type'])) await relayEventStream(x, response, timeoutMs, filters);
  else await relayBody(x, response, timeoutMs > 0 ? sentAt + timeoutMs : 0, timeoutMs, filters);
}
