// The proxy listener's request handler (spec 2 §4.1, §5, §7): routing table, the request
// phases (receive → authenticate → resolve → admit → dispatch → respond → finalize) and
// error rendering in the caller's envelope.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { GatewayError, isGatewayError } from '../lib/errors.ts';
import { RequestContext } from '../http/context.ts';
import { originForm } from '../http/request-target.ts';
import { sendBody, sendEmpty, sendJson } from '../http/respond.ts';
import type { ClientIpResolver } from '../http/real-ip.ts';
import { requestIdFrom } from '../http/request-id.ts';
import type { Logger } from '../observability/logger.ts';
import type { Metrics } from '../observability/metrics.ts';
import { usageEventFrom, usageRequest, type UsageSink } from '../observability/usage-events.ts';
import { ContentCapture } from '../observability/content-capture.ts';
import type { HealthTracker } from './dispatch/health.ts';
import { createFinalizeSinks, reportListenerAnswer, reportRequest } from '../observability/access-log.ts';
import type { SnapshotHolder } from '../snapshot/snapshot.ts';
import { openAIChatCodec, type CallerCodec } from './dispatch/codecs.ts';
import type { UpstreamSettings } from './dispatch/attempt.ts';
import { chatCompletions } from './endpoints/chat.ts';
import { listModels, retrieveModel } from './endpoints/models.ts';
import { countTokens, messages } from './endpoints/messages.ts';
import { anthropicMessagesCodec } from './dispatch/messages-codec.ts';
import { embeddings } from './endpoints/embeddings.ts';
import { openAIEmbeddingsCodec } from './dispatch/embeddings-codec.ts';
import { completions } from './endpoints/completions.ts';
import { openAICompletionsCodec } from './dispatch/completions-codec.ts';
import { rerank } from './endpoints/rerank.ts';
import { rerankCodec } from './dispatch/rerank-codec.ts';
import { imageGenerations } from './endpoints/images.ts';
import { openAIImagesCodec } from './dispatch/images-codec.ts';
import { speech } from './endpoints/speech.ts';
import { openAISpeechCodec } from './dispatch/speech-codec.ts';
import { handleHostStage, handlePathStage } from '../passthrough/handler.ts';
import type { Limiter } from '../limits/limiter.ts';
import type { PassthroughHooks } from '../passthrough/hooks.ts';
import type { UrlRewriter } from '../http/url-rewrite.ts';
import type { ListenerAnswer } from '../http/server.ts';

export interface Lifecycle {
  /** A configuration has been applied. */
  ready: boolean;
  /** Graceful shutdown has begun. */
  draining: boolean;
  /** The drain timeout passed: the requests still in flight are being cut by the gateway. */
  cutting?: boolean;
}

export interface ProxyOptions {
  snapshots: SnapshotHolder;
  lifecycle: Lifecycle;
  logger: Logger;
  metrics: Metrics;
  /** Where usage events go (one per model-serving request and per failed attempt). */
  usage: UsageSink;
  /** Per-target health and cooldown state; outlives snapshots. */
  health: HealthTracker;
  accessLog: boolean;
  bodyLimitBytes: number;
  requestIdHeaders: readonly string[];
  clientIp: ClientIpResolver;
  realIpHeader: string;
  upstream: UpstreamSettings;
  /** Rate, token and concurrency limits; undefined = none enforced. */
  limits?: Limiter;
  /** Admit checks and response filters of pass-through requests (limits, budgets, guardrails). */
  passthroughHooks?: PassthroughHooks;
  /** `proxy.url_rewrites`, compiled; applied to the request target before any route matching. */
  rewriteUrl?: UrlRewriter;
  /** `proxy.request_timeout_ms` (0 = none): a request still arriving after it was cut by the listener (408). */
  requestTimeoutMs?: number;
  /** `proxy.send_timeout_ms` (0 = none): a caller that reads none of its response for this long is cut (499). */
  sendTimeoutMs?: number;
  /** `proxy.max_in_flight_requests` (0 = none): past it, new requests are shed with 503 `overloaded`. */
  maxInFlight?: number;
}

type Handler = (ctx: RequestContext, options: ProxyOptions) => Promise<void> | void;

interface Route {
  readonly methods: ReadonlyMap<string, Handler>;
  readonly allow: string;
  /** The protocol whose error envelope the route answers in. */
  readonly codec: CallerCodec;
  /** A health probe: never access-logged or counted. */
  readonly probe: boolean;
  /** The usage-event operation of a model-serving route (its requests leave a usage row). */
  readonly operation: string | undefined;
}

interface RouteOptions {
  codec?: CallerCodec;
  probe?: boolean;
  operation?: string;
}

function route(handlers: Record<string, Handler>, { codec = openAIChatCodec, probe = false, operation }: RouteOptions = {}): Route {
  return { methods: new Map(Object.entries(handlers)), allow: Object.keys(handlers).join(', '), codec, probe, operation };
}

function probe(kind: 'livez' | 'readyz'): Handler {
  return (ctx, options) => {
    const { draining, ready } = options.lifecycle;
    const failing = draining ? 'shutting down' : kind === 'readyz' && !ready ? 'no configuration applied' : undefined;
    const headers = { 'x-content-type-options': 'nosniff' };
    if (failing === undefined) sendBody(ctx, 200, 'ok', 'text/plain; charset=utf-8', headers);
    else sendBody(ctx, 503, failing, 'text/plain; charset=utf-8', headers);
  };
}

const ROUTES = new Map<string, Route>([
  ['/livez', route({ GET: probe('livez'), HEAD: probe('livez') }, { probe: true })],
  ['/readyz', route({ GET: probe('readyz'), HEAD: probe('readyz') }, { probe: true })],
  ['/v1/models', route({ GET: listModels, HEAD: listModels })],
  ['/v1/chat/completions', route({ POST: chatCompletions }, { operation: 'chat' })],
  ['/v1/messages', route({ POST: messages }, { codec: anthropicMessagesCodec, operation: 'messages' })],
  ['/v1/messages/count_tokens', route({ POST: countTokens }, { codec: anthropicMessagesCodec, operation: 'count_tokens' })],
  ['/v1/embeddings', route({ POST: embeddings }, { codec: openAIEmbeddingsCodec, operation: 'embeddings' })],
  ['/v1/completions', route({ POST: completions }, { codec: openAICompletionsCodec, operation: 'completions' })],
  ['/v1/rerank', route({ POST: rerank }, { codec: rerankCodec, operation: 'rerank' })],
  ['/v1/images/generations', route({ POST: imageGenerations }, { codec: openAIImagesCodec, operation: 'images' })],
  ['/v1/audio/speech', route({ POST: speech }, { codec: openAISpeechCodec, operation: 'speech' })],
]);

/** `GET /v1/models/{model}`: the one typed route with a parameter (the rest of the path, decoded). */
const MODEL_PREFIX = '/v1/models/';
const MODEL_ROUTE: Route = route({ GET: retrieveModel, HEAD: retrieveModel });
const MODEL_TEMPLATE = '/v1/models/{model}';

interface Matched {
  route: Route;
  /** The route template: the access log's path and the metrics' `endpoint` label. */
  endpoint: string;
  /** The model a `/v1/models/{model}` path names. */
  model?: string;
}

function matchRoute(path: string): Matched | undefined {
  const r = ROUTES.get(path);
  if (r !== undefined) return { route: r, endpoint: path };
  if (!path.startsWith(MODEL_PREFIX) || path.length === MODEL_PREFIX.length) return undefined;
  const raw = path.slice(MODEL_PREFIX.length);
  let model = raw;
  try {
    model = decodeURIComponent(raw);
  } catch {
    // A malformed escape names no model there is: the raw text answers 404 like any unknown name.
  }
  return { route: MODEL_ROUTE, endpoint: MODEL_TEMPLATE, model };
}

/** Reports the requests the proxy listener answers before the handler sees them (http/server.ts). */
export function createListenerAnswerReporter(options: ProxyOptions): (answer: ListenerAnswer) => void {
  const sinks = createFinalizeSinks(options.logger, options.metrics, options.accessLog);
  return (answer) => {
    try {
      reportListenerAnswer(answer, options.clientIp(answer.remoteAddress, answer.headers?.[options.realIpHeader]), sinks);
    } catch (err) {
      options.logger.error({ request_id: answer.requestId, err: err instanceof Error ? err.message : String(err) }, 'request finalize failed');
    }
  };
}

export function createProxyHandler(options: ProxyOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const sinks = createFinalizeSinks(options.logger, options.metrics, options.accessLog);
  const rewriteUrl = options.rewriteUrl;
  const maxInFlight = options.maxInFlight ?? 0;
  let inFlight = 0;
  return (req, res) => {
    // receive
    const ctx = new RequestContext(
      req,
      res,
      requestIdFrom(req.headers, options.requestIdHeaders),
      options.clientIp(req.socket.remoteAddress, req.headers[options.realIpHeader]),
    );
    ctx.sendTimeoutMs = options.sendTimeoutMs ?? 0;
    // Content capture only while an exporter has content_mode: full (0 = off, nothing wrapped).
    const captureLimit = options.usage.contentCapture?.() ?? 0;
    if (captureLimit > 0) ctx.capture = new ContentCapture(res, captureLimit);
    options.metrics.inFlight.inc();
    inFlight++;
    res.once('close', () => {
      inFlight--;
      // finalize: exactly once, whatever happened.
      ctx.latencyMs();
      if (!res.writableFinished) {
        // A response the gateway cut itself (an upstream failure after the head) keeps the
        // failure's status; otherwise the client left first.
        let cutByGateway = ctx.errorKind !== undefined;
        if (!cutByGateway && options.lifecycle.cutting === true) {
          // Shutdown cut it, not the caller: recorded before the cancel handlers run, so their
          // "client disconnected" never stands for it (first failure wins).
          ctx.status = 503;
          ctx.fail('shutting_down', 'request cut by the drain timeout at shutdown');
          cutByGateway = true;
        }
        ctx.clientGone();
        if (!cutByGateway && requestTimedOut(ctx, options.requestTimeoutMs ?? 0)) {
          // The listener answered 408 and closed the connection: the request never arrived whole.
          ctx.status = 408;
          ctx.fail('request_timeout', `request not received within ${options.requestTimeoutMs} ms`);
        } else if (!cutByGateway) {
          ctx.status = 499;
          ctx.fail('client_disconnected', 'client disconnected before the response finished');
        }
      }
      options.metrics.inFlight.dec();
      // An exception here would be uncaught (an event handler) and end the process: whatever
      // a request carried, it costs at most its own records.
      try {
        // Charge the reported tokens and give concurrency slots back, once, whatever happened.
        ctx.limits?.release(ctx.usage);
        let time: string | undefined;
        if (ctx.operation !== undefined) {
          const event = usageEventFrom(ctx);
          time = event.occurred_at;
          options.usage.emit(event, usageRequest(ctx));
        }
        if (ctx.deferReport === undefined) reportRequest(ctx, sinks, time);
        else ctx.deferReport((at) => reportRequest(ctx, sinks, at));
      } catch (err) {
        options.logger.error({ request_id: ctx.requestId, err: err instanceof Error ? err.message : String(err) }, 'request finalize failed');
      }
    });
    // Spec 3 rule 4: the rewrite runs first; the host stage, typed routes and path stage all see its result.
    const url = rewriteUrl === undefined ? (req.url ?? '/') : rewriteUrl(req.url ?? '/');
    if (maxInFlight > 0 && inFlight > maxInFlight && !isProbe(url)) {
      shed(ctx, url, maxInFlight);
      return;
    }
    // The asterisk form asks about the server itself (RFC 9110 §9.3.7): no route has it as a path.
    if (url === '*') {
      answerAsteriskForm(ctx);
      return;
    }
    // Pass-through host stage: a route claiming the inbound host runs before the typed routes
    // (for an absolute-form target, the host it names).
    if (handleHostStage(ctx, options, url)) return;
    const local = originForm(url);
    const q = local.indexOf('?');
    const path = q < 0 ? local : local.slice(0, q);
    // A `#` is not part of an HTTP request target (RFC 9112 §3.2): such a target is no typed
    // route, wherever the `#` is (a pass-through route that claims it answers 400 unsafe_path).
    const matched = local.includes('#') ? undefined : matchRoute(path);
    if (matched === undefined) {
      // Pass-through path stage; an unclaimed /passthrough/* path falls through to the empty 404.
      if (handlePathStage(ctx, options, url)) return;
      ctx.fail('not_found', 'no route for path');
      sendEmpty(ctx, 404);
      return;
    }
    const r = matched.route;
    ctx.endpoint = matched.endpoint;
    // The probe paths are never logged or counted, whatever the method (a 405 included).
    if (r.probe) ctx.quiet = true;
    if (matched.model !== undefined) ctx.requestedModel = matched.model;
    const codec = r.codec;
    ctx.sdkRequestIdHeader = codec.requestIdHeader;
    const handler = r.methods.get(req.method ?? 'GET');
    if (handler === undefined) {
      fail(ctx, codec, new GatewayError('method_not_allowed', `method ${req.method} is not allowed on ${path}`, { headers: { allow: r.allow }, publicCode: null }));
      return;
    }
    if (r.operation !== undefined) ctx.operation = r.operation;
    let out: Promise<void> | void;
    try {
      out = handler(ctx, options);
    } catch (err) {
      fail(ctx, codec, err);
      return;
    }
    if (out !== undefined) out.catch((err: unknown) => fail(ctx, codec, err));
  };
}

/** Every method some route of the proxy listener accepts: what `OPTIONS *` answers, and a CONNECT's `Allow`. */
export const PROXY_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS';

/** `OPTIONS *` is answered here, never forwarded; any other method names no resource (404, as an unrouted path). */
function answerAsteriskForm(ctx: RequestContext): void {
  if (ctx.req.method === 'OPTIONS') {
    sendEmpty(ctx, 200, { allow: PROXY_METHODS });
    return;
  }
  ctx.fail('not_found', 'no route for path');
  sendEmpty(ctx, 404);
}

/**
 * Load shedding: refuse a request at once, before its body is read, while the listener already
 * serves its cap. Cheaper for everyone than queueing it behind a stalled upstream until memory
 * runs out; the caller's SDK retries after Retry-After.
 */
function shed(ctx: RequestContext, url: string, max: number): void {
  const local = originForm(url);
  const q = local.indexOf('?');
  const path = q < 0 ? local : local.slice(0, q);
  const matched = matchRoute(path);
  if (matched !== undefined) {
    ctx.endpoint = matched.endpoint;
    // A model-serving request refused here still leaves its usage row (the model is not known yet).
    if (matched.route.methods.has(ctx.req.method ?? 'GET')) ctx.operation = matched.route.operation;
  }
  const codec = matched?.route.codec ?? openAIChatCodec;
  ctx.sdkRequestIdHeader = codec.requestIdHeader;
  const message = `the gateway is serving its limit of ${max} requests at once; retry later`;
  fail(ctx, codec, new GatewayError('overloaded', message, { headers: { 'retry-after': '1' } }));
}

function isProbe(url: string): boolean {
  return url === '/livez' || url === '/readyz' || url.startsWith('/livez?') || url.startsWith('/readyz?');
}

/** Answer with an error in the route's envelope (or end a started response). */
function fail(ctx: RequestContext, codec: CallerCodec, err: unknown): void {
  if (!isGatewayError(err) && isStackOverflow(err) && ctx.upstreamSentMs === undefined) {
    // JSON.parse takes any depth; re-serialising or translating a body nested thousands deep
    // overflows the stack. Before anything went upstream, that depth can only be the caller's.
    err = new GatewayError('invalid_request', 'the request JSON is nested too deeply', { publicCode: null });
  }
  const e = isGatewayError(err) ? err : new GatewayError('internal_error', 'internal gateway error', { cause: err });
  if (!isGatewayError(err)) ctx.fail('internal', err instanceof Error ? err.message : String(err));
  else ctx.fail(e.code, e.message);
  if (ctx.res.headersSent) {
    ctx.res.end();
    return;
  }
  sendJson(ctx, e.status, codec.errorBody(e), e.headers);
}

/** Whether the listener's request timeout ended this request: its body was still arriving past it. */
function requestTimedOut(ctx: RequestContext, timeoutMs: number): boolean {
  return timeoutMs > 0 && !ctx.req.complete && ctx.elapsedMs() >= timeoutMs;
}

function isStackOverflow(err: unknown): boolean {
  return err instanceof RangeError && err.message.includes('call stack');
}
