// One attempt against one resolved target: choose the native or translated path, build the
// upstream request through the adapter, call it, and answer the caller (JSON or SSE) in the
// caller's protocol with the caller's alias, tapping usage on the side. A failure before anything
// reached the caller is returned as a typed value for the attempt loop to act on.
import { performance } from 'node:perf_hooks';
import { GatewayError } from '../../lib/errors.ts';
import type { RequestContext } from '../../http/context.ts';
import { sendBody, startStream, endStream } from '../../http/respond.ts';
import { REQUEST_ID_HEADER } from '../../http/request-id.ts';
import { callUpstream, compileEndpoint, readResponseBody, upstreamPools, type UpstreamEndpoint, type UpstreamResponse } from '../../http/upstream.ts';
import type { ApiKeyEntry, ModelEntry, ProviderKeyEntry } from '../../snapshot/snapshot.ts';
import { presentedKey } from '../../auth/api-key.ts';
import type { CanonicalUsage } from '../protocols/canonical.ts';
import { OpenAIChatStreamDecoder } from '../protocols/openai-chat-stream.ts';
import type { Adapter, AdapterTarget, ClassifiedError, EndpointSpec, LocalReply, Operation } from '../providers/contract.ts';
import { shapeRequestBody } from '../providers/key-body.ts';
import { addKeyHeaders, type KeyHeaders } from '../providers/key-headers.ts';
import type { HeaderTemplateVar } from '../../lib/default-headers.ts';
import { liftReasoning, type OpenAIResponseOptions } from '../protocols/openai-response-options.ts';
import type { AttemptErrorClass } from './retry-policy.ts';
import { parseObject, type CallerCodec } from './codecs.ts';
import { NotAnEventStream, relayStream, SSE_HEADERS, TranslatingRelay } from './relay.ts';
import { relayBytes } from './relay-bytes.ts';
import { failureKind, shouldRetryOf, upstreamFailureError, upstreamStatusError } from './upstream-errors.ts';
import { errorUnder2xx, hasNoChoices, NO_CHOICES } from './answer-shape.ts';
import { recordUsage } from './usage.ts';

export interface UpstreamSettings {
  timeoutMs: number;
  streamTimeoutMs: number;
  connectTimeoutMs: number;
  /** Deployment default for same-target retries (`upstream.retries`). */
  retries: number;
}

/** What the caller asked for, independent of the target. */
export interface CallerRequest {
  codec: CallerCodec;
  /** The caller's endpoint: `chat`, `messages`, or one of NATIVE_ONLY. */
  operation: Operation;
  body: Record<string, unknown>;
  /** The caller's model string, written back into answers. */
  alias: string;
  stream: boolean;
  /** Keep the usage-only stream chunk (OpenAI `stream_options.include_usage`). */
  wantUsage: boolean;
  /** The caller's API key (its ids and names fill a provider key's default header templates). */
  apiKey: ApiKeyEntry;
}

export interface Target {
  readonly entry: ModelEntry;
  readonly providerKey: ProviderKeyEntry;
  readonly adapter: Adapter;
  readonly upstreamModel: string;
  /** Per-target overrides (model, then group); undefined = the deployment's. */
  readonly timeoutMs: number | undefined;
  readonly streamTimeoutMs: number | undefined;
}

/** Why an attempt failed before anything was written to the caller. */
export interface AttemptFailure {
  /** Spec 2 §6.1 vocabulary: upstream_status, transport, timeout, upstream_decode, ... */
  errorClass: AttemptErrorClass;
  /** The upstream's HTTP status, when it answered. */
  status: number | undefined;
  retryAfterMs: number | undefined;
  /** The upstream's `x-should-retry` verdict on its error response, when it sent one. */
  shouldRetry?: boolean;
  /** What the caller sees if no other attempt serves. */
  error: GatewayError;
}

export type AttemptResult = { ok: true } | { ok: false; failure: AttemptFailure };

/**
 * The compiled upstream endpoint of a provider key's endpoint spec: made on first use and kept as
 * long as the snapshot that holds the spec. A key with its own TLS trust gets the pools of that
 * setting (shared by every key with the same one); an http endpoint has no TLS to set.
 */
const endpoints = new WeakMap<EndpointSpec, UpstreamEndpoint>();

function upstreamEndpoint(spec: EndpointSpec, key: ProviderKeyEntry): UpstreamEndpoint {
  let e = endpoints.get(spec);
  if (e === undefined) {
    e = key.tls !== undefined && spec.url.startsWith('https:') ? compileEndpoint(spec.url, upstreamPools(key.tls)) : compileEndpoint(spec.url);
    endpoints.set(spec, e);
  }
  return e;
}

function failed(failure: AttemptFailure): AttemptResult {
  return { ok: false, failure };
}

function configFailure(message: string): AttemptResult {
  return failed({ errorClass: 'invalid_config', status: undefined, retryAfterMs: undefined, error: new GatewayError('provider_unavailable', message) });
}

/**
 * Operations with no chat form: served only by targets that serve them natively (their adapter
 * speaks the caller's protocol, and PROVIDERS_OF admits their model's provider label).
 */
export const NATIVE_ONLY: ReadonlySet<Operation> = new Set<Operation>(['count_tokens', 'embeddings', 'completions', 'rerank', 'images', 'speech']);

/**
 * The provider labels whose keys may serve an operation, where spec 2 §4.1 restricts it: rerank to
 * OpenAI's family and two rerank vendors, image generation to OpenAI's; the built-in mock serves both.
 */
const PROVIDERS_OF: Partial<Record<Operation, ReadonlySet<string>>> = {
  rerank: new Set(['openai', 'cohere', 'jina', 'mock']),
  images: new Set(['openai', 'mock']),
};

/** Whether a target serves the caller's request natively: its adapter speaks the protocol, and its model's provider label may. */
export function servesNatively(call: CallerRequest, adapter: Adapter | undefined, provider: string): boolean {
  return adapter?.speaks.includes(call.codec.protocol) === true && PROVIDERS_OF[call.operation]?.has(provider) !== false;
}

/**
 * Native when the target serves the request natively; translated through canonical chat otherwise.
 * An operation in NATIVE_ONLY is native only: the refusal otherwise.
 */
function plan(call: CallerRequest, t: Target): { op: Operation; native: boolean; body: Record<string, unknown> } | GatewayError {
  const adapter = t.adapter;
  const target: AdapterTarget = { key: t.providerKey.view, upstreamModel: t.upstreamModel };
  // Body options shape chat and messages requests: the other bodies have few of their fields (a
  // chat rename such as max_tokens → max_completion_tokens would break a completion), and their
  // upstreams refuse fields they do not know.
  const shaping = NATIVE_ONLY.has(call.operation) ? undefined : t.providerKey.body;
  if (servesNatively(call, adapter, t.entry.provider)) {
    const body = adapter.prepareRequest(call.operation, call.body, target);
    return { op: call.operation, native: true, body: shaping === undefined ? body : shapeRequestBody(body, shaping) };
  }
  if (NATIVE_ONLY.has(call.operation)) return nativeOnlyUnsupported(call, { provider: t.entry.provider });
  const canonical = call.codec.toCanonical(call.body);
  const body = adapter.translator !== undefined ? adapter.translator.encodeRequest(canonical, target) : adapter.prepareRequest('chat', canonical, target);
  return { op: 'chat', native: false, body: shaping === undefined ? body : shapeRequestBody(body, shaping) };
}

export async function attempt(ctx: RequestContext, call: CallerRequest, t: Target, settings: UpstreamSettings): Promise<AttemptResult> {
  const planned = plan(call, t);
  if (planned instanceof GatewayError) {
    if (planned.code === 'not_implemented') throw refusal(ctx, planned);
    return failed({ errorClass: 'invalid_request', status: undefined, retryAfterMs: undefined, error: planned });
  }
  const { body, native } = planned;
  const adapter = t.adapter;
  if (adapter.local !== undefined) {
    const local = adapter.local;
    // A JSON-only answer is in the endpoint's own format: read (usage included) as an upstream's is.
    if (planned.op === 'embeddings' || planned.op === 'rerank' || planned.op === 'images') {
      const json = local[planned.op];
      if (json === undefined) return configFailure(`model '${call.alias}' cannot serve ${planned.op}: its local provider has no answer for it`);
      let answer: Record<string, unknown>;
      try {
        answer = json(body, t.upstreamModel);
      } catch (err) {
        // A refusal of the request (the mock's caps): final, as an upstream's 400 would be.
        if (err instanceof GatewayError) return failed({ errorClass: 'invalid_request', status: err.status, retryAfterMs: undefined, error: err });
        throw err;
      }
      answerLocalNative(ctx, call, JSON.stringify(answer));
      return { ok: true };
    }
    if (planned.op === 'speech') {
      if (local.speech === undefined) return configFailure(`model '${call.alias}' cannot serve speech: its local provider has no answer for it`);
      const { contentType, audio } = local.speech(body, t.upstreamModel);
      ctx.upstreamFirstByteMs = ctx.elapsedMs();
      ctx.downstreamFirstByteMs = ctx.upstreamFirstByteMs;
      sendBody(ctx, 200, audio, contentType);
      return { ok: true };
    }
    const asked = { ...body, stream_options: call.stream ? { include_usage: true } : undefined };
    answerLocal(ctx, call, planned.op === 'completions' && local.completions !== undefined ? local.completions(asked, t.upstreamModel) : local.chat(asked, t.upstreamModel));
    return { ok: true };
  }
  const endpoint: EndpointSpec | Error | undefined = t.providerKey.endpoints.get(planned.op);
  if (endpoint === undefined || endpoint instanceof Error) {
    return configFailure(`model '${call.alias}' cannot serve ${planned.op}: ${endpoint?.message ?? 'no endpoint'}`);
  }
  const timeoutMs = t.timeoutMs ?? settings.timeoutMs;
  const streamTimeoutMs = t.streamTimeoutMs ?? (settings.streamTimeoutMs > 0 ? settings.streamTimeoutMs : timeoutMs);
  const payload = JSON.stringify(body);
  const sentAt = performance.now();
  ctx.upstreamSentMs = sentAt - ctx.startedAt;
  const headers: Record<string, string | string[] | number> = {
    ...endpoint.headers,
    ...forwardedHeaders(ctx, native, call),
    // Speech answers audio (or, asked for, an event stream): any type the provider sends.
    accept: planned.op === 'speech' ? '*/*' : call.stream ? 'text/event-stream' : 'application/json',
    'content-length': Buffer.byteLength(payload),
    [REQUEST_ID_HEADER]: ctx.requestId,
  };
  if (t.providerKey.headers !== undefined) keyHeaders(headers, t.providerKey.headers, ctx, call, t);
  const result = await callUpstream({
    endpoint: upstreamEndpoint(endpoint, t.providerKey),
    method: 'POST',
    headers,
    body: payload,
    connectTimeoutMs: settings.connectTimeoutMs,
    // A stream's first event cannot come before its head: the head waits no longer than either bound.
    headersTimeoutMs: call.stream ? earliest(timeoutMs, streamTimeoutMs) : timeoutMs,
    cancel: ctx,
    resendOnStaleConnection: true,
  });
  if (!result.ok) {
    if (result.kind === 'aborted') {
      ctx.fail('client_disconnected', result.message);
      return { ok: true };
    }
    return failed({ errorClass: failureKind(result) as AttemptErrorClass, status: undefined, retryAfterMs: undefined, error: upstreamFailureError(result) });
  }
  const response = result.response;
  const status = response.statusCode ?? 502;
  const headMs = ctx.elapsedMs();
  // A compressed body is decoded before it is read (or, speech audio, relayed).
  if (!response.decodeBody()) {
    response.destroy();
    const message = `upstream answered with a content-encoding the gateway cannot decode (${String(response.headers['content-encoding'])})`;
    return failed({ errorClass: 'upstream_decode', status: undefined, retryAfterMs: undefined, error: new GatewayError('upstream_decode', message) });
  }
  if (status < 200 || status >= 300) {
    const read = await readUnlessGone(ctx, response, timeoutMs, 1024 * 1024);
    // An upstream that answered with an error was still called: its timings are recorded.
    ctx.upstreamFirstByteMs = headMs;
    ctx.upstreamEndMs = ctx.elapsedMs();
    const classified: ClassifiedError = adapter.classifyError(status, read.ok ? read.body.toString('utf8') : '', response.headers);
    return failed({
      errorClass: classified.errorClass,
      status,
      retryAfterMs: classified.retryAfterMs,
      shouldRetry: shouldRetryOf(response.headers),
      error: upstreamStatusError(status, classified, t.providerKey.view.apiKey),
    });
  }
  // Audio is relayed as it arrives, not read: a speaking client plays the first bytes at once. A
  // JSON answer is no audio: read below, where an error under the 2xx is found.
  if (planned.op === 'speech' && !String(response.headers['content-type'] ?? '').startsWith('application/json')) {
    try {
      await relayBytes(ctx, response, streamTimeoutMs);
      return { ok: true };
    } catch (err) {
      const e = err as GatewayError;
      return failed({ errorClass: e.code === 'upstream_timeout' ? 'timeout' : e.code === 'upstream_decode' ? 'upstream_decode' : 'transport', status: undefined, retryAfterMs: undefined, error: e });
    }
  }
  const contentType = response.headers['content-type'] ?? '';
  let text: string;
  if (call.stream && contentType.startsWith('text/event-stream')) {
    const relay = native
      ? call.codec.createNativeRelay(call.alias, !call.wantUsage, t.providerKey.response)
      : new TranslatingRelay(adapter.translator?.createStreamDecoder() ?? new OpenAIChatStreamDecoder(t.providerKey.response), call.codec.createEncoder(call.alias, call.wantUsage), call.codec);
    try {
      await relayStream(ctx, response, relay, call.codec, streamTimeoutMs, t.providerKey.view.apiKey);
      return { ok: true };
    } catch (err) {
      // The upstream failed before its first byte: nothing reached the caller.
      if (!(err instanceof NotAnEventStream)) {
        const e = err as GatewayError;
        return failed({ errorClass: e.code === 'upstream_timeout' ? 'timeout' : e.code === 'upstream_decode' ? 'upstream_decode' : 'transport', status: undefined, retryAfterMs: undefined, error: e });
      }
      // A JSON document mislabelled as a stream (typically an error): answered as the JSON it is.
      text = err.text;
    }
  } else {
    // timeout_ms bounds the whole non-streaming exchange: the body gets what is left of it.
    const remaining = timeoutMs > 0 ? Math.max(1, timeoutMs - (performance.now() - sentAt)) : 0;
    const read = await readUnlessGone(ctx, response, remaining, undefined, `upstream request timed out after ${timeoutMs}ms`);
    if (!read.ok) {
      if (ctx.clientDisconnected) {
        ctx.fail('client_disconnected', read.message);
        return { ok: true };
      }
      return failed({ errorClass: failureKind(read) as AttemptErrorClass, status: undefined, retryAfterMs: undefined, error: upstreamFailureError(read) });
    }
    ctx.upstreamEndMs = ctx.elapsedMs();
    text = read.body.toString('utf8');
  }
  // A JSON answer's first byte is its head (a stream's is its first event, set by the relay).
  ctx.upstreamFirstByteMs = headMs;
  const inBand = errorUnder2xx(text, (b) => adapter.classifyError(502, b, response.headers), t.providerKey.view.apiKey);
  if (inBand !== undefined) {
    return failed({ errorClass: 'upstream_in_band', status: undefined, retryAfterMs: undefined, shouldRetry: shouldRetryOf(response.headers), error: inBand });
  }
  // An OpenAI-family upstream's completion (native, or translated without an adapter translator).
  const chatAnswer = (planned.op === 'chat' && (native ? call.codec.protocol === 'openai-chat' : adapter.translator === undefined)) || planned.op === 'completions';
  if (chatAnswer && hasNoChoices(text)) {
    return failed({ errorClass: 'upstream_decode', status: undefined, retryAfterMs: undefined, error: new GatewayError('upstream_decode', NO_CHOICES) });
  }
  const answer = native ? call.codec.nativeJson(text, call.alias, t.providerKey.response) : translateJson(call, adapter, text, t.providerKey.response);
  if (answer === undefined) {
    return failed({ errorClass: 'upstream_decode', status: undefined, retryAfterMs: undefined, error: new GatewayError('upstream_decode', 'upstream returned a body that is not a JSON object') });
  }
  if (call.stream) {
    // The upstream ignored `stream: true`: a streaming client (the SDKs) reads nothing from a JSON
    // body, so the answer goes out as the stream it would have been.
    const events = call.codec.answerAsStream(answer.body, call.alias, call.wantUsage);
    if (events === undefined) {
      return failed({ errorClass: 'upstream_decode', status: undefined, retryAfterMs: undefined, error: new GatewayError('upstream_decode', 'upstream answered a stream request with JSON that is not a complete response') });
    }
    recordUsage(ctx, answer.usage);
    ctx.downstreamFirstByteMs = ctx.elapsedMs();
    startStream(ctx, 200, { ...SSE_HEADERS });
    endStream(ctx, events);
    return { ok: true };
  }
  recordUsage(ctx, answer.usage);
  ctx.downstreamFirstByteMs = ctx.elapsedMs();
  sendBody(ctx, 200, answer.body, 'application/json');
  return { ok: true };
}

/** readResponseBody, ended at once when the caller leaves: nobody is waiting for the body. */
async function readUnlessGone(ctx: RequestContext, response: UpstreamResponse, timeoutMs: number, maxBytes?: number, timeoutMessage?: string): ReturnType<typeof readResponseBody> {
  const off = ctx.onCancel(() => response.destroy());
  try {
    return await readResponseBody(response, timeoutMs, maxBytes, timeoutMessage);
  } finally {
    off();
  }
}

function translateJson(call: CallerRequest, adapter: Adapter, text: string, upstream: OpenAIResponseOptions | undefined): { body: string; usage: CanonicalUsage | undefined } | undefined {
  let canonical: Record<string, unknown>;
  if (adapter.translator !== undefined) {
    const decoded = adapter.translator.decodeResponse(text);
    if (decoded instanceof Error) return undefined;
    canonical = decoded;
  } else {
    const parsed = parseObject(text);
    // Something other than a completion would translate into an empty answer.
    if (parsed === undefined || !Array.isArray(parsed.choices)) return undefined;
    canonical = parsed;
    if (upstream?.reasoningPath !== undefined) liftReasoning(canonical, upstream.reasoningPath, 'message');
  }
  return { body: call.codec.renderJson(canonical, call.alias), usage: canonical.usage as CanonicalUsage | undefined };
}

/** The built-in mock's answer to a JSON-only endpoint, relayed as an upstream's native answer. */
function answerLocalNative(ctx: RequestContext, call: CallerRequest, text: string): void {
  ctx.upstreamFirstByteMs = ctx.elapsedMs();
  ctx.downstreamFirstByteMs = ctx.upstreamFirstByteMs;
  const answer = call.codec.nativeJson(text, call.alias);
  recordUsage(ctx, answer?.usage);
  sendBody(ctx, 200, answer?.body ?? text, 'application/json');
}

/** The built-in mock's chat (canonical) or completions answer, rendered in the caller's protocol. */
function answerLocal(ctx: RequestContext, call: CallerRequest, reply: LocalReply): void {
  ctx.upstreamFirstByteMs = ctx.elapsedMs();
  ctx.downstreamFirstByteMs = ctx.upstreamFirstByteMs;
  if (reply.kind === 'json') {
    recordUsage(ctx, reply.body.usage as CanonicalUsage | undefined);
    sendBody(ctx, 200, call.codec.renderJson(reply.body, call.alias), 'application/json');
    return;
  }
  const encoder = call.codec.createEncoder(call.alias, call.wantUsage);
  let out = '';
  for (const chunk of reply.chunks) {
    if (chunk.usage !== undefined) recordUsage(ctx, chunk.usage as CanonicalUsage);
    out += encoder.push(chunk);
  }
  startStream(ctx, 200, { ...SSE_HEADERS });
  endStream(ctx, out + encoder.end());
}

/** Vendor headers the native messages path forwards: `anthropic-beta`, `anthropic-version`, ... */
function forwardedHeaders(ctx: RequestContext, native: boolean, call: CallerRequest): Record<string, string> | undefined {
  if (!native || call.codec.protocol !== 'anthropic-messages') return undefined;
  let out: Record<string, string> | undefined;
  const headers = ctx.req.headers;
  for (const name in headers) {
    if (!name.startsWith('anthropic-')) continue;
    const v = headers[name];
    if (typeof v === 'string' && v !== '') (out ??= {})[name] = v;
  }
  return out;
}

/** A provider key's default and forwarded caller headers, under names the gateway left unset. */
function keyHeaders(headers: Record<string, string | string[] | number>, rules: KeyHeaders, ctx: RequestContext, call: CallerRequest, t: Target): void {
  const vars = (name: HeaderTemplateVar): string | undefined => {
    switch (name) {
      case 'request.id': return ctx.requestId;
      case 'request.api_key.id': return call.apiKey.id;
      case 'request.api_key.name': return call.apiKey.name;
      case 'request.api_key.team_id': return call.apiKey.doc.team_id;
      case 'request.api_key.user_id': return call.apiKey.doc.user_id;
      case 'model.id': return t.entry.id;
      case 'model.name': return t.entry.name;
      case 'provider_key.id': return t.providerKey.id;
      case 'provider_key.name': return t.providerKey.name;
    }
  };
  addKeyHeaders(headers, rules, ctx.req.rawHeaders, vars, rules.forwards ? presentedKey(ctx.req.headers) : undefined);
}

/** The shorter of two timeouts, 0 standing for none. */
const earliest = (a: number, b: number): number => (a === 0 ? b : b === 0 ? a : Math.min(a, b));

/**
 * A refusal before any upstream call, made the request's answer. A 501 leaves a zero-token usage
 * row (spec 2 §6.1), where other refusals report no tokens at all.
 */
export function refusal(ctx: RequestContext, err: GatewayError): GatewayError {
  if (err.code === 'not_implemented') recordUsage(ctx, { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });
  return err;
}

/** The route and the name of the upstream endpoint of each operation refused with a 501: [path, article, noun]. */
const REFUSED_AS: Partial<Record<Operation, readonly [string, string, string]>> = {
  embeddings: ['/v1/embeddings', 'an', 'embeddings endpoint'],
  completions: ['/v1/completions', 'a', 'completions endpoint'],
  rerank: ['/v1/rerank', 'a', 'rerank endpoint'],
  images: ['/v1/images/generations', 'an', 'image generation endpoint'],
  speech: ['/v1/audio/speech', 'a', 'speech endpoint'],
};

/**
 * The refusal of an operation served natively only by a model with no target that serves it.
 * `from` is a direct model's provider, or for a model group the routing tags that narrowed its
 * targets (an empty list when none did).
 */
export function nativeOnlyUnsupported(call: CallerRequest, from: { provider: string } | { tags: readonly string[] }): GatewayError {
  const tags = 'tags' in from && from.tags.length > 0 ? ` (of the targets the routing tags ${from.tags.join(', ')} select)` : '';
  const refused = REFUSED_AS[call.operation];
  if (refused !== undefined) {
    const [path, article, noun] = refused;
    const why = 'provider' in from ? `its provider${from.provider === '' ? '' : ` (${from.provider})`} has no` : `none of its targets${tags} has ${article}`;
    // A 501 is final: the OpenAI SDK would otherwise retry a 5xx twice, refused alike each time.
    return new GatewayError('not_implemented', `model '${call.alias}' does not support ${path}: ${why} ${noun} in this gateway`, { headers: { 'x-should-retry': 'false' } });
  }
  return new GatewayError('invalid_request', `model '${call.alias}' does not support /v1/messages/count_tokens: token counting is only available for messages-family (anthropic) targets${tags}`, { publicCode: null });
}
