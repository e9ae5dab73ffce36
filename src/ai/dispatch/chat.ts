// One chat attempt against one resolved target: build the upstream request through the adapter,
// call it, and relay the answer (JSON or SSE) with the caller's alias, tapping usage on the side.
// Upstream failures are values here; they become the caller's error only at the edge.
import type { IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import { GatewayError } from '../../lib/errors.ts';
import { findTopLevelMember } from '../../lib/json-scan.ts';
import { SseFrameTooLarge, SseLineSplitter } from '../../lib/sse-lines.ts';
import type { RequestContext } from '../../http/context.ts';
import { endStream, sendBody, startStream, writeChunk } from '../../http/respond.ts';
import { REQUEST_ID_HEADER } from '../../http/request-id.ts';
import { callUpstream, compileEndpoint, readResponseBody, type UpstreamEndpoint } from '../../http/upstream.ts';
import type { ResolvedModel } from '../../snapshot/snapshot.ts';
import { openAIStreamErrorFrame, scanUsage, type ChatRequest, type OpenAIUsage } from '../protocols/openai-chat.ts';
import { OpenAIChatStreamRelay } from '../protocols/openai-chat-stream.ts';
import type { Adapter, AdapterTarget, EndpointSpec } from '../providers/contract.ts';
import { failureKind, upstreamFailureError, upstreamStatusError } from './upstream-errors.ts';

export interface UpstreamSettings {
  timeoutMs: number;
  streamTimeoutMs: number;
  connectTimeoutMs: number;
}

const endpoints = new Map<string, UpstreamEndpoint>();

function upstreamEndpoint(url: string): UpstreamEndpoint {
  let e = endpoints.get(url);
  if (e === undefined) {
    e = compileEndpoint(url);
    endpoints.set(url, e);
  }
  return e;
}

function recordUsage(ctx: RequestContext, u: OpenAIUsage | undefined): void {
  if (u === undefined) return;
  ctx.usage = {
    promptTokens: u.prompt_tokens,
    completionTokens: u.completion_tokens,
    totalTokens: u.total_tokens,
    cachedTokens: u.prompt_tokens_details?.cached_tokens,
    reasoningTokens: u.completion_tokens_details?.reasoning_tokens,
  };
}

const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
};

/**
 * Runs the attempt and answers the caller. Throws a GatewayError only before anything was
 * written to the caller; afterwards failures end the stream with an error event.
 */
export async function dispatchChat(
  ctx: RequestContext,
  resolved: ResolvedModel,
  adapter: Adapter,
  endpoint: EndpointSpec,
  request: ChatRequest,
  settings: UpstreamSettings,
): Promise<void> {
  const entry = resolved.entry;
  const pk = entry.providerKey!;
  const alias = request.model;
  const target: AdapterTarget = { key: pk.view, upstreamModel: resolved.upstreamModel };
  const body = adapter.prepareRequest('chat', request, target);
  const stream = request.stream === true;
  const callerWantsUsage = request.stream_options?.include_usage === true;
  const timeoutMs = entry.timeoutMs ?? settings.timeoutMs;
  const streamTimeoutMs = entry.streamTimeoutMs ?? (settings.streamTimeoutMs > 0 ? settings.streamTimeoutMs : timeoutMs);

  if (adapter.local !== undefined) {
    const reply = adapter.local.chat({ ...body, stream_options: stream ? { include_usage: true } : undefined }, resolved.upstreamModel);
    if (reply.kind === 'json') {
      answerJson(ctx, JSON.stringify(reply.body), alias);
      return;
    }
    const text = reply.chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('') + 'data: [DONE]\n\n';
    relayLocalStream(ctx, text, alias, !callerWantsUsage);
    return;
  }

  const payload = JSON.stringify(body);
  const sentAt = performance.now();
  const result = await callUpstream({
    endpoint: upstreamEndpoint(endpoint.url),
    method: 'POST',
    headers: {
      ...endpoint.headers,
      accept: stream ? 'text/event-stream' : 'application/json',
      'content-length': Buffer.byteLength(payload),
      [REQUEST_ID_HEADER]: ctx.requestId,
    },
    body: payload,
    connectTimeoutMs: settings.connectTimeoutMs,
    headersTimeoutMs: timeoutMs,
    cancel: ctx,
  });
  if (!result.ok) {
    ctx.fail(failureKind(result), result.message);
    if (result.kind === 'aborted') return;
    throw upstreamFailureError(result);
  }
  const response = result.response;
  const status = response.statusCode ?? 502;
  if (status < 200 || status >= 300) {
    const read = await readResponseBody(response, timeoutMs, 1024 * 1024);
    const text = read.ok ? read.body.toString('utf8') : '';
    const classified = adapter.classifyError(status, text, response.headers);
    ctx.fail('upstream_status', `upstream returned ${status}`);
    throw upstreamStatusError(status, classified);
  }
  const contentType = response.headers['content-type'] ?? '';
  if (stream && contentType.startsWith('text/event-stream')) {
    await relayStream(ctx, response, alias, !callerWantsUsage, streamTimeoutMs);
    return;
  }
  // timeout_ms bounds the whole non-streaming exchange: the body gets what is left of it.
  const remaining = timeoutMs > 0 ? Math.max(1, timeoutMs - (performance.now() - sentAt)) : 0;
  const read = await readResponseBody(response, remaining, undefined, `upstream request timed out after ${timeoutMs}ms`);
  if (!read.ok) {
    ctx.fail(failureKind(read), read.message);
    if (ctx.clientDisconnected) return;
    throw upstreamFailureError(read);
  }
  ctx.upstreamFirstByteMs ??= ctx.elapsedMs();
  answerJson(ctx, read.body.toString('utf8'), alias);
}

function answerJson(ctx: RequestContext, text: string, alias: string): void {
  // The body is relayed as the upstream wrote it, with only `model` spliced in: no parse and
  // re-serialise on the hot path. A body that is not a well-formed object up to its `model`
  // member (or has none) is checked with a full parse before it is called an upstream fault.
  const model = findTopLevelMember(text, 'model');
  if (model === undefined && !isJsonObject(text)) {
    ctx.fail('upstream_decode', 'upstream returned a body that is not a JSON object');
    throw new GatewayError('upstream_decode', 'upstream returned a body that is not a JSON object');
  }
  recordUsage(ctx, scanUsage(text));
  const body = model !== undefined && text.charCodeAt(model.start) === 34 ? text.slice(0, model.start) + JSON.stringify(alias) + text.slice(model.end) : text;
  sendBody(ctx, 200, body, 'application/json');
}

function isJsonObject(text: string): boolean {
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === 'object' && !Array.isArray(v);
  } catch {
    return false;
  }
}

function relayLocalStream(ctx: RequestContext, text: string, alias: string, dropUsage: boolean): void {
  const relay = new OpenAIChatStreamRelay(alias, dropUsage);
  const split = new SseLineSplitter();
  let out = '';
  split.push(text, (line) => (out += relay.line(line)));
  recordUsage(ctx, relay.usage);
  ctx.upstreamFirstByteMs = ctx.elapsedMs();
  startStream(ctx, 200, { ...SSE_HEADERS });
  writeChunk(ctx, out);
  endStream(ctx);
}

/**
 * Relay an upstream event stream. The head goes to the caller with the first upstream bytes, so a
 * failure before them is still an ordinary error response. Each gap between upstream chunks,
 * the first included, is bounded by `idleMs`.
 */
function relayStream(
  ctx: RequestContext,
  response: IncomingMessage,
  alias: string,
  dropUsage: boolean,
  idleMs: number,
): Promise<void> {
  const relay = new OpenAIChatStreamRelay(alias, dropUsage);
  const split = new SseLineSplitter();
  return new Promise<void>((resolve, reject) => {
    let started = false;
    let finished = false;
    let timer: NodeJS.Timeout | undefined;

    const finish = (err?: GatewayError, kind?: string): void => {
      if (finished) return;
      finished = true;
      if (timer !== undefined) clearTimeout(timer);
      unsubscribe();
      recordUsage(ctx, relay.usage);
      if (err === undefined) {
        endStream(ctx);
        resolve();
        return;
      }
      ctx.fail(kind ?? 'transport', err.message);
      response.destroy();
      if (!started) {
        reject(err);
        return;
      }
      ctx.status = err.status;
      writeChunk(ctx, openAIStreamErrorFrame(err));
      endStream(ctx);
      resolve();
    };
    const arm = (): void => {
      if (idleMs <= 0) return;
      if (timer !== undefined) clearTimeout(timer);
      timer = setTimeout(() => {
        finish(new GatewayError('upstream_timeout', `upstream stream timed out after ${idleMs}ms without data`), 'timeout');
      }, idleMs);
    };
    const onAbort = (): void => {
      if (finished) return;
      finished = true;
      if (timer !== undefined) clearTimeout(timer);
      ctx.fail('client_disconnected', 'client disconnected mid-stream');
      recordUsage(ctx, relay.usage);
      response.destroy();
      resolve();
    };
    const unsubscribe = ctx.onCancel(onAbort);

    response.on('data', (chunk: Buffer) => {
      if (finished) return;
      let out = '';
      try {
        split.push(chunk, (line) => (out += relay.line(line)));
      } catch (e) {
        if (e instanceof SseFrameTooLarge) {
          finish(new GatewayError('upstream_decode', e.message), 'upstream_decode');
          return;
        }
        throw e;
      }
      if (!started) {
        started = true;
        ctx.upstreamFirstByteMs = ctx.elapsedMs();
        startStream(ctx, 200, { ...SSE_HEADERS });
      }
      if (relay.inBandError !== undefined) ctx.fail('upstream_in_band', 'upstream sent an error event mid-stream');
      if (out.length > 0 && !writeChunk(ctx, out)) {
        // The caller reads slower than the upstream writes: stop reading, and stop the idle clock.
        response.pause();
        if (timer !== undefined) clearTimeout(timer);
        ctx.res.once('drain', () => {
          if (finished) return;
          arm();
          response.resume();
        });
        return;
      }
      arm();
    });
    response.once('end', () => {
      if (finished) return;
      const rest = split.flush();
      let out = rest.length > 0 ? relay.line(rest) : '';
      if (!started) {
        started = true;
        startStream(ctx, 200, { ...SSE_HEADERS });
      }
      if (relay.inBandError !== undefined) {
        if (out.length > 0) writeChunk(ctx, out);
        ctx.status = 502;
        finish();
        return;
      }
      if (!relay.sawDone) {
        if (!relay.sawFinish) {
          if (out.length > 0) writeChunk(ctx, out);
          finish(new GatewayError('stream_aborted', 'upstream stream ended before the response was complete'), 'upstream_decode');
          return;
        }
        // A finished response without the end marker: complete it for the caller.
        out += 'data: [DONE]\n\n';
      }
      if (out.length > 0) writeChunk(ctx, out);
      finish();
    });
    const broke = (): void => {
      finish(new GatewayError('upstream_transport', 'upstream connection broke mid-stream'), 'transport');
    };
    response.once('error', broke);
    response.once('aborted', broke);
    arm();
  });
}

