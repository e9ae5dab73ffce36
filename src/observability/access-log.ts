// The finalize report of a request: the metrics sample and the access log, one structured line
// per answered request written when the response body finishes (spec 2 §6.2). The line carries
// attribution and sizes, never a presented credential or a body. It has the shape of the process
// log (level, time, service, msg) so one pipeline reads both, and is written as one template
// literal because it runs for every request; its runs of members that repeat for one caller and
// model are made once and kept.
import type { RequestContext } from '../http/context.ts';
import type { ListenerAnswer } from '../http/server.ts';
import { isoTime } from '../lib/iso-time.ts';
import { jsonNumber, jsonString } from '../lib/json-text.ts';
import { KeptValues } from '../lib/kept-values.ts';
import { KEPT_ATTRIBUTIONS } from './attribution-memo.ts';
import { lineWriter, type Logger } from './logger.ts';
import type { Metrics, NameLabel, RequestSample } from './metrics.ts';

export interface FinalizeSinks {
  metrics: Metrics;
  /** Undefined when the access log is off (config, or a log level above info). */
  accessLog: ((line: string) => void) | undefined;
}

export function createFinalizeSinks(logger: Logger, metrics: Metrics, accessLog: boolean): FinalizeSinks {
  return {
    metrics,
    accessLog: accessLog && logger.isLevelEnabled('info') ? lineWriter(logger) : undefined,
  };
}

const ms = (v: number | undefined): number | undefined => (v === undefined ? undefined : Math.round(v * 1000) / 1000);
const seconds = (from: number | undefined, to: number | undefined): number | undefined =>
  from === undefined || to === undefined || to < from ? undefined : (to - from) / 1000;
const UNKNOWN = 'unknown';
const label = (v: string | undefined): string => (v === undefined || v === '' ? UNKNOWN : v);

/** The metrics view of a finished request: every label value bounded, `unknown` never empty. */
export function requestSample(ctx: RequestContext, names: readonly NameLabel[]): RequestSample {
  const model = label(ctx.model);
  // A wildcard alias passes the caller's own text upstream: that is not a bounded label value.
  const upstreamModel = model.includes('*') ? 'wildcard' : ctx.upstreamModelLabel ?? label(ctx.upstreamModel);
  let nameValues: Record<NameLabel, string> | undefined;
  if (names.length > 0) {
    nameValues = {
      api_key_name: label(ctx.apiKeyName),
      team_name: label(ctx.apiKeyTeam),
      provider_key_name: label(ctx.providerKeyName),
      policy_name: label(ctx.policyName),
      user_name: label(ctx.apiKeyUser),
    };
  }
  const usage = ctx.usage;
  const elapsed = ctx.latencyMs();
  return {
    endpoint: ctx.endpoint === '' ? 'other' : ctx.endpoint,
    llm: ctx.operation !== undefined,
    provider: label(ctx.provider),
    model,
    upstreamModel,
    providerKeyId: label(ctx.providerKeyId),
    apiKeyId: label(ctx.apiKeyId),
    status: ctx.status,
    stream: ctx.stream,
    fallback: ctx.fallbacks > 0,
    names: nameValues ?? NO_NAMES,
    seconds: elapsed / 1000,
    upstreamSeconds: seconds(ctx.upstreamSentMs, ctx.upstreamEndMs),
    downstreamTtftSeconds: ctx.downstreamFirstByteMs === undefined ? undefined : ctx.downstreamFirstByteMs / 1000,
    upstreamTtftSeconds: seconds(ctx.upstreamSentMs, ctx.upstreamFirstByteMs),
    inputTokens: usage?.promptTokens,
    outputTokens: usage?.completionTokens,
    totalTokens: usage?.totalTokens,
  };
}

const NO_NAMES: Record<NameLabel, string> = { api_key_name: UNKNOWN, team_name: UNKNOWN, provider_key_name: UNKNOWN, policy_name: UNKNOWN, user_name: UNKNOWN };

/**
 * Report a finished request: metrics and the access log line. Called once per request. `time`
 * is the request's usage-event timestamp when it has one (one Date formatting per request).
 */
export function reportRequest(ctx: RequestContext, sinks: FinalizeSinks, time?: string): void {
  if (ctx.quiet) return;
  const sample = requestSample(ctx, sinks.metrics.nameLabels);
  sinks.metrics.record(sample);
  if (sinks.accessLog === undefined) return;
  const usage = ctx.usage;
  const upstreamMs = sample.upstreamSeconds === undefined ? undefined : ms(sample.upstreamSeconds * 1000);
  // The text JSON.stringify writes for the line's object (members that are undefined left out),
  // built as one template literal: fewer instructions than JSON.stringify, for every request.
  sinks.accessLog(`{"level":"info","time":${jsonString(time ?? isoTime())},"service":"tollgate","type":"access",\
"request_id":${jsonString(ctx.requestId)}${outcome.get(ctx)}"latency_ms":${jsonNumber(ms(sample.seconds * 1000))}\
${optNum(',"upstream_first_byte_ms":', ms(ctx.upstreamFirstByteMs))}${optNum(',"downstream_ttft_ms":', ms(ctx.downstreamFirstByteMs))}\
${optNum(',"upstream_latency_ms":', upstreamMs)}${attribution.get(ctx)}${optNum(',"prompt_tokens":', usage?.promptTokens)}\
${optNum(',"completion_tokens":', usage?.completionTokens)}${optNum(',"total_tokens":', usage?.totalTokens)}\
${optNum(',"request_body_bytes":', ctx.requestBytes)}${optNum(',"response_body_bytes":', ctx.responseBytes)}${optStr(',"error_kind":', ctx.errorKind)}\
${optStr(',"error":', ctx.errorMessage)},"msg":"request completed"}\n`);
}

// The members that repeat from one request to the next for one caller and model are made once
// and kept (KeptValues), as usage events keep theirs (attribution-memo.ts).

interface Outcome {
  method: string | undefined;
  endpoint: string;
  status: number;
}

/** `,"method":...,"path":...,"status":...,` (method when known). */
const outcome = new KeptValues<RequestContext, Outcome, string>(
  KEPT_ATTRIBUTIONS,
  (k, ctx) => k.method === ctx.req.method && k.endpoint === ctx.endpoint && k.status === ctx.status,
  (ctx) => ({ method: ctx.req.method, endpoint: ctx.endpoint, status: ctx.status }),
  (ctx) => `${optStr(',"method":', ctx.req.method)},"path":${jsonString(ctx.endpoint)},"status":${jsonNumber(ctx.status)},`,
);

interface Attribution {
  clientIp: string;
  apiKeyId: string | undefined;
  apiKeyName: string | undefined;
  model: string | undefined;
  provider: string | undefined;
  providerKeyId: string | undefined;
  upstreamModel: string | undefined;
  stream: boolean;
  attempts: number;
  fallbacks: number;
}

/** From `client_ip` to `fallbacks`, each when known. */
const attribution = new KeptValues<RequestContext, Attribution, string>(
  KEPT_ATTRIBUTIONS,
  (k, ctx) => k.clientIp === ctx.clientIp && k.apiKeyId === ctx.apiKeyId && k.apiKeyName === ctx.apiKeyName && k.model === ctx.model &&
    k.provider === ctx.provider && k.providerKeyId === ctx.providerKeyId && k.upstreamModel === ctx.upstreamModel &&
    k.stream === ctx.stream && k.attempts === ctx.attempts && k.fallbacks === ctx.fallbacks,
  (ctx) => ({
    clientIp: ctx.clientIp, apiKeyId: ctx.apiKeyId, apiKeyName: ctx.apiKeyName, model: ctx.model, provider: ctx.provider,
    providerKeyId: ctx.providerKeyId, upstreamModel: ctx.upstreamModel, stream: ctx.stream, attempts: ctx.attempts, fallbacks: ctx.fallbacks,
  }),
  (ctx) => `${optStr(',"client_ip":', ctx.clientIp)}${optStr(',"api_key_id":', ctx.apiKeyId)}${optStr(',"api_key_name":', ctx.apiKeyName)}\
${optStr(',"model":', ctx.model)}${optStr(',"provider":', ctx.provider)}${optStr(',"provider_key_id":', ctx.providerKeyId)}\
${optStr(',"upstream_model":', ctx.upstreamModel)},"stream":${ctx.stream},"attempts":${jsonNumber(ctx.attempts)},"fallbacks":${jsonNumber(ctx.fallbacks)}`,
);

/** `<key>` and the value, or nothing when the value is undefined. */
const optStr = (key: string, v: string | undefined): string => (v === undefined ? '' : key + jsonString(v));
const optNum = (key: string, v: number | undefined): string => (v === undefined ? '' : key + jsonNumber(v));

/**
 * Report a request the listener answered itself before any handler saw it (malformed 400, head
 * over the size limit 431, head not received in time 408; CONNECT 405, whose head was read and
 * whose method is named): metrics and an access line, with no path or credential.
 */
export function reportListenerAnswer(answer: ListenerAnswer, clientIp: string | undefined, sinks: FinalizeSinks): void {
  sinks.metrics.record({ ...LISTENER_SAMPLE, status: answer.status, seconds: answer.seconds });
  if (sinks.accessLog === undefined) return;
  const line = JSON.stringify({
    level: 'info',
    time: isoTime(),
    service: 'tollgate',
    type: 'access',
    request_id: answer.requestId,
    method: answer.method,
    path: 'other',
    status: answer.status,
    latency_ms: ms(answer.seconds * 1000),
    client_ip: clientIp,
    stream: false,
    attempts: 0,
    fallbacks: 0,
    response_body_bytes: 0,
    error_kind: answer.errorKind,
    error: answer.errorMessage,
    msg: 'request completed',
  });
  sinks.accessLog(line + '\n');
}

const LISTENER_SAMPLE: RequestSample = {
  endpoint: 'other',
  llm: false,
  provider: UNKNOWN,
  model: UNKNOWN,
  upstreamModel: UNKNOWN,
  providerKeyId: UNKNOWN,
  apiKeyId: UNKNOWN,
  status: 0,
  stream: false,
  fallback: false,
  names: NO_NAMES,
  seconds: 0,
  upstreamSeconds: undefined,
  downstreamTtftSeconds: undefined,
  upstreamTtftSeconds: undefined,
  inputTokens: undefined,
  outputTokens: undefined,
  totalTokens: undefined,
};
