// Every Prometheus metric Tollgate exports is defined here, on one registry per process
// (spec 2 §6.2; families other modules record, such as the rate-limit ones, are defined here too).
// Label values are bounded: route templates, model aliases from the snapshot, resource ids and
// names from the configuration, `unknown` never empty. Readable name labels (api_key_name, ...)
// exist only when `observability.metrics.labels` turns them on.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { KeptValues } from '../lib/kept-values.ts';
import { KEPT_ATTRIBUTIONS } from './attribution-memo.ts';
import { SeriesCounter, SeriesHistogram, type CounterChild, type HistogramChild } from './series.ts';

export const NAME_LABELS = ['api_key_name', 'team_name', 'provider_key_name', 'policy_name', 'user_name'] as const;
export type NameLabel = (typeof NAME_LABELS)[number];

/** Histogram bucket sets, configurable under `observability.metrics.buckets`. */
export const DEFAULT_BUCKETS = {
  request_duration: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600],
  request_e2e_latency: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 420, 600],
  request_ttft: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300],
  guardrail_latency: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
};
export type BucketSet = keyof typeof DEFAULT_BUCKETS;

export interface MetricsOptions {
  processMetrics?: boolean;
  /** Readable name labels to add to the per-request families. */
  nameLabels?: Partial<Record<NameLabel, boolean>>;
  buckets?: Partial<Record<BucketSet, readonly number[]>>;
}

/** One finished request, as the metrics see it (built once in finalize). */
export interface RequestSample {
  /** Route template. */
  endpoint: string;
  /** Model-serving request (it has a usage row): counted in the llm_* families too. */
  llm: boolean;
  provider: string;
  model: string;
  upstreamModel: string;
  providerKeyId: string;
  apiKeyId: string;
  status: number;
  stream: boolean;
  fallback: boolean;
  /** Values of the enabled name labels (unknown when absent). */
  names: Readonly<Record<NameLabel, string>>;
  /** Request received → response finished. */
  seconds: number;
  /** Upstream request sent → upstream response finished (serving attempt), when it was contacted. */
  upstreamSeconds: number | undefined;
  /** Request received → response head sent. */
  downstreamTtftSeconds: number | undefined;
  /** Upstream request sent → first upstream byte. */
  upstreamTtftSeconds: number | undefined;
  inputTokens: number | undefined;
  outputTokens: number | undefined;
  totalTokens: number | undefined;
}

/** The fields of a sample that pick its series. */
type SampleLabels = Pick<RequestSample, 'endpoint' | 'llm' | 'provider' | 'model' | 'upstreamModel' | 'providerKeyId' | 'apiKeyId' | 'status' | 'stream' | 'fallback'> & {
  names: Record<NameLabel, string>;
};

const sampleLabelsOf = (s: RequestSample): SampleLabels => ({
  endpoint: s.endpoint,
  llm: s.llm,
  provider: s.provider,
  model: s.model,
  upstreamModel: s.upstreamModel,
  providerKeyId: s.providerKeyId,
  apiKeyId: s.apiKeyId,
  status: s.status,
  stream: s.stream,
  fallback: s.fallback,
  names: { ...s.names },
});

function sameSampleLabels(k: SampleLabels, s: RequestSample): boolean {
  const a = k.names;
  const b = s.names;
  return (
    k.status === s.status &&
    k.apiKeyId === s.apiKeyId &&
    k.model === s.model &&
    k.endpoint === s.endpoint &&
    k.provider === s.provider &&
    k.upstreamModel === s.upstreamModel &&
    k.providerKeyId === s.providerKeyId &&
    k.stream === s.stream &&
    k.fallback === s.fallback &&
    k.llm === s.llm &&
    a.api_key_name === b.api_key_name &&
    a.team_name === b.team_name &&
    a.provider_key_name === b.provider_key_name &&
    a.policy_name === b.policy_name &&
    a.user_name === b.user_name
  );
}

/** `2xx`, `4xx`, ... for the e2e/TTFT families. */
export function statusClass(status: number): string {
  return status >= 100 && status < 600 ? `${Math.floor(status / 100)}xx` : 'unknown';
}

/** success | client_error | rate_limited | client_cancelled | upstream_error. */
export function outcome(status: number): string {
  if (status < 400) return 'success';
  if (status === 429) return 'rate_limited';
  if (status === 499) return 'client_cancelled';
  if (status < 500) return 'client_error';
  return 'upstream_error';
}

/**
 * The label children of one label combination, made once and reused. A series shows in the
 * exposition only once recorded, so the side and TTFT children can be made before they are needed.
 */
interface RequestChildren {
  legacyCount: CounterChild;
  legacyDuration: HistogramChild;
  proxyCount: CounterChild;
  proxyFailed: CounterChild | undefined;
  proxyDuration: HistogramChild;
  llmCount: CounterChild | undefined;
  llmDuration: HistogramChild | undefined;
  e2eDownstream: HistogramChild;
  e2eUpstream: HistogramChild;
  ttftDownstream: HistogramChild;
  ttftUpstream: HistogramChild;
  llmTtftDownstream: HistogramChild | undefined;
  llmTtftUpstream: HistogramChild | undefined;
  inputTokens: CounterChild | undefined;
  outputTokens: CounterChild | undefined;
  totalTokens: CounterChild | undefined;
  legacyInput: CounterChild;
  legacyOutput: CounterChild;
  cancelled: CounterChild | undefined;
}

const DETAIL_LABELS = ['endpoint', 'provider', 'model', 'upstream_model', 'provider_key_id', 'api_key_id', 'stream'] as const;

export class Metrics {
  readonly registry = new Registry();
  /** The name labels in use, in label order. */
  readonly nameLabels: readonly NameLabel[];

  readonly requestsTotal: SeriesCounter;
  readonly requestDuration: SeriesHistogram;
  readonly tokensTotal: SeriesCounter;
  readonly proxyRequests: SeriesCounter;
  readonly proxyFailedRequests: SeriesCounter;
  readonly proxyRequestDuration: SeriesHistogram;
  readonly llmRequests: SeriesCounter;
  readonly llmRequestDuration: SeriesHistogram;
  readonly requestE2eLatency: SeriesHistogram;
  readonly requestTtft: SeriesHistogram;
  readonly llmTimeToFirstToken: SeriesHistogram;
  readonly llmInputTokens: SeriesCounter;
  readonly llmOutputTokens: SeriesCounter;
  readonly llmTotalTokens: SeriesCounter;
  readonly clientCancelled: SeriesCounter;
  readonly guardrailLatency: Histogram<string>;
  readonly guardrailBypasses: Counter<string>;
  readonly usageEventsEmitted: SeriesCounter;
  readonly usageEventsRejected: Counter<string>;
  readonly otlpDrops: Counter<string>;
  readonly otlpExported: Counter<string>;
  readonly inFlight: Gauge;
  readonly configReloads: Counter<string>;
  readonly configLastReloadSuccessful: Gauge;
  readonly configLastReloadSuccessTimestamp: Gauge;
  readonly configGeneration: Gauge;
  readonly rateLimitRejections: Counter<'scope' | 'layer'>;
  readonly redisFailures: Counter<'operation'>;

  private readonly requestChildren = new Map<string, RequestChildren>();
  /**
   * The children of the most recent label combinations, found by comparing the label fields: a
   * request of a recent combination builds no key string and hashes nothing.
   */
  private readonly recentChildren = new KeptValues<RequestSample, SampleLabels, RequestChildren>(
    KEPT_ATTRIBUTIONS,
    sameSampleLabels,
    sampleLabelsOf,
    (s) => this.childrenOf(s),
  );
  private readonly usageChildren = new Map<string, CounterChild>();

  constructor(options: MetricsOptions = {}) {
    const registers = [this.registry];
    const names = NAME_LABELS.filter((n) => options.nameLabels?.[n] === true);
    this.nameLabels = names;
    const buckets = (set: BucketSet): number[] => [...(options.buckets?.[set] ?? DEFAULT_BUCKETS[set])];
    const sideLabels = ['side', 'endpoint', 'provider', 'model', 'status_class', 'stream'];
    const llmTtftLabels = ['side', ...DETAIL_LABELS, ...names];

    this.requestsTotal = new SeriesCounter({
      name: 'tollgate_requests_total',
      help: 'Requests answered by the proxy listener.',
      labelNames: ['endpoint', 'provider', 'model', 'status'],
      registers,
    });
    this.requestDuration = new SeriesHistogram({
      name: 'tollgate_request_duration_seconds',
      help: 'Time from request received to response body finished, proxy listener.',
      labelNames: ['endpoint', 'provider', 'model', 'status'],
      buckets: buckets('request_duration'),
      registers,
    });
    this.tokensTotal = new SeriesCounter({
      name: 'tollgate_tokens_consumed_total',
      help: 'Tokens reported by upstream providers.',
      labelNames: ['provider', 'model', 'token_type'],
      registers,
    });
    this.proxyRequests = new SeriesCounter({
      name: 'tollgate_proxy_requests_total',
      help: 'Requests answered by the proxy listener, with attribution.',
      labelNames: [...DETAIL_LABELS, 'is_fallback', 'status', 'outcome', ...names],
      registers,
    });
    this.proxyFailedRequests = new SeriesCounter({
      name: 'tollgate_proxy_failed_requests_total',
      help: 'Requests answered with a status of 400 or more (499: the client left).',
      labelNames: [...DETAIL_LABELS, 'is_fallback', 'status', 'outcome', ...names],
      registers,
    });
    this.proxyRequestDuration = new SeriesHistogram({
      name: 'tollgate_proxy_request_duration_seconds',
      help: 'Time from request received to response body finished, with attribution.',
      labelNames: [...DETAIL_LABELS, 'status', ...names],
      buckets: buckets('request_duration'),
      registers,
    });
    this.llmRequests = new SeriesCounter({
      name: 'tollgate_llm_requests_total',
      help: 'Model-serving requests (the ones that leave a usage event).',
      labelNames: [...DETAIL_LABELS, 'is_fallback', 'status', 'outcome', ...names],
      registers,
    });
    this.llmRequestDuration = new SeriesHistogram({
      name: 'tollgate_llm_request_duration_seconds',
      help: 'Duration of model-serving requests.',
      labelNames: [...DETAIL_LABELS, 'status', ...names],
      buckets: buckets('request_duration'),
      registers,
    });
    this.requestE2eLatency = new SeriesHistogram({
      name: 'tollgate_request_e2e_latency_seconds',
      help: 'End-to-end latency: side="downstream" request received to response finished; side="upstream" upstream request sent to upstream response finished.',
      labelNames: sideLabels,
      buckets: buckets('request_e2e_latency'),
      registers,
    });
    this.requestTtft = new SeriesHistogram({
      name: 'tollgate_request_ttft_seconds',
      help: 'Time to first byte of streamed answers: side="downstream" to the caller, side="upstream" from the provider.',
      labelNames: sideLabels,
      buckets: buckets('request_ttft'),
      registers,
    });
    this.llmTimeToFirstToken = new SeriesHistogram({
      name: 'tollgate_llm_time_to_first_token_seconds',
      help: 'Time to first token of streamed model answers, with attribution.',
      labelNames: llmTtftLabels,
      buckets: buckets('request_ttft'),
      registers,
    });
    const tokenLabels = [...DETAIL_LABELS, ...names];
    this.llmInputTokens = new SeriesCounter({ name: 'tollgate_llm_input_tokens_total', help: 'Input (prompt) tokens reported by providers.', labelNames: tokenLabels, registers });
    this.llmOutputTokens = new SeriesCounter({ name: 'tollgate_llm_output_tokens_total', help: 'Output (completion) tokens reported by providers.', labelNames: tokenLabels, registers });
    this.llmTotalTokens = new SeriesCounter({ name: 'tollgate_llm_total_tokens_total', help: 'Total tokens reported by providers.', labelNames: tokenLabels, registers });
    this.clientCancelled = new SeriesCounter({
      name: 'tollgate_proxy_client_cancelled_requests_total',
      help: 'Requests whose caller disconnected before the response finished (recorded as 499).',
      labelNames: ['endpoint', 'provider', 'model', 'provider_key_id', ...names.filter((n) => n === 'provider_key_name')],
      registers,
    });
    this.guardrailLatency = new Histogram({
      name: 'tollgate_guardrail_latency_seconds',
      help: 'Guardrail evaluation time.',
      labelNames: ['guardrail', 'kind', 'phase', 'result', 'error_type'],
      buckets: buckets('guardrail_latency'),
      registers,
    });
    this.guardrailBypasses = new Counter({
      name: 'tollgate_guardrail_bypasses_total',
      help: 'Guardrail evaluations bypassed, by reason.',
      labelNames: ['reason'],
      registers,
    });
    this.usageEventsEmitted = new SeriesCounter({
      name: 'tollgate_usage_events_emitted_total',
      help: 'Usage events emitted (terminal rows and failed-attempt rows).',
      labelNames: ['operation', 'status_class'],
      registers,
    });
    this.usageEventsRejected = new Counter({
      name: 'tollgate_usage_events_rejected_total',
      help: 'Usage events a sink could not take (backlog full, write error).',
      labelNames: ['sink', 'reason'],
      registers,
    });
    this.otlpDrops = new Counter({
      name: 'tollgate_otlp_fanout_drops_total',
      help: 'Usage events an OTLP exporter dropped, by reason (permanent_error, retry_budget_exhausted, queue_full, exporter_closed).',
      labelNames: ['exporter', 'reason'],
      registers,
    });
    this.otlpExported = new Counter({
      name: 'tollgate_otlp_exported_spans_total',
      help: 'Usage events an OTLP exporter delivered.',
      labelNames: ['exporter'],
      registers,
    });
    this.inFlight = new Gauge({ name: 'tollgate_proxy_in_flight_requests', help: 'Requests in flight on the proxy listener.', registers });
    this.configReloads = new Counter({ name: 'tollgate_config_reloads_total', help: 'Resource reloads by result.', labelNames: ['result'], registers });
    this.configLastReloadSuccessful = new Gauge({
      name: 'tollgate_config_last_reload_successful',
      help: '1 when the last resource load or reload succeeded, else 0.',
      registers,
    });
    this.configLastReloadSuccessTimestamp = new Gauge({
      name: 'tollgate_config_last_reload_success_timestamp_seconds',
      help: 'Unix time of the last successful resource load or reload.',
      registers,
    });
    this.configGeneration = new Gauge({ name: 'tollgate_config_generation', help: 'Generation of the snapshot currently serving.', registers });
    this.rateLimitRejections = new Counter({
      name: 'tollgate_ratelimit_rejections_total',
      help: 'Requests refused by a rate, token or concurrency limit: layer api_key, model or policy; scope api_key, model, team, member, team_member or conditional.',
      labelNames: ['scope', 'layer'] as const,
      registers,
    });
    this.redisFailures = new Counter({
      name: 'tollgate_redis_failures_total',
      help: 'Failed calls to the Redis rate-limit store, by operation (admit, charge, release, renew).',
      labelNames: ['operation'] as const,
      registers,
    });
    if (options.processMetrics !== false) collectDefaultMetrics({ register: this.registry, prefix: 'tollgate_' });
  }

  /**
   * Record one finished request in every request family. Label children are cached per label
   * combination (all values are bounded): a recent combination is found by comparing fields, an
   * older one by its key string in a map.
   */
  record(s: RequestSample): void {
    const c = this.recentChildren.get(s);
    c.legacyCount.inc();
    c.legacyDuration.observe(s.seconds);
    c.proxyCount.inc();
    c.proxyFailed?.inc();
    c.proxyDuration.observe(s.seconds);
    c.llmCount?.inc();
    c.llmDuration?.observe(s.seconds);
    c.cancelled?.inc();
    c.e2eDownstream.observe(s.seconds);
    if (s.upstreamSeconds !== undefined) c.e2eUpstream.observe(s.upstreamSeconds);
    if (s.stream) {
      if (s.downstreamTtftSeconds !== undefined) {
        c.ttftDownstream.observe(s.downstreamTtftSeconds);
        c.llmTtftDownstream?.observe(s.downstreamTtftSeconds);
      }
      if (s.upstreamTtftSeconds !== undefined) {
        c.ttftUpstream.observe(s.upstreamTtftSeconds);
        c.llmTtftUpstream?.observe(s.upstreamTtftSeconds);
      }
    }
    if (s.inputTokens !== undefined) {
      c.inputTokens?.inc(s.inputTokens);
      c.legacyInput.inc(s.inputTokens);
    }
    if (s.outputTokens !== undefined) {
      c.outputTokens?.inc(s.outputTokens);
      c.legacyOutput.inc(s.outputTokens);
    }
    if (s.totalTokens !== undefined) c.totalTokens?.inc(s.totalTokens);
  }

  /** The children of a sample's label combination, made on its first sample. */
  private childrenOf(s: RequestSample): RequestChildren {
    let key = `${s.endpoint}\u0000${s.provider}\u0000${s.model}\u0000${s.upstreamModel}\u0000${s.providerKeyId}\u0000${s.apiKeyId}\u0000${s.status}\u0000${s.stream ? 1 : 0}${s.fallback ? 1 : 0}${s.llm ? 1 : 0}`;
    for (const n of this.nameLabels) key += `\u0000${s.names[n]}`;
    let c = this.requestChildren.get(key);
    if (c === undefined) {
      c = this.children(s);
      this.requestChildren.set(key, c);
    }
    return c;
  }

  private children(s: RequestSample): RequestChildren {
    const names: Record<string, string> = {};
    for (const n of this.nameLabels) names[n] = s.names[n];
    const status = String(s.status);
    const stream = s.stream ? 'true' : 'false';
    const detail = {
      endpoint: s.endpoint,
      provider: s.provider,
      model: s.model,
      upstream_model: s.upstreamModel,
      provider_key_id: s.providerKeyId,
      api_key_id: s.apiKeyId,
      stream,
      ...names,
    };
    const counted = { ...detail, is_fallback: s.fallback ? 'true' : 'false', status, outcome: outcome(s.status) };
    const timed = { ...detail, status };
    const side = { endpoint: s.endpoint, provider: s.provider, model: s.model, status_class: statusClass(s.status), stream };
    const legacy = { endpoint: s.endpoint, provider: s.provider, model: s.model, status };
    const cancelledLabels: Record<string, string> = { endpoint: s.endpoint, provider: s.provider, model: s.model, provider_key_id: s.providerKeyId };
    if (this.nameLabels.includes('provider_key_name')) cancelledLabels.provider_key_name = s.names.provider_key_name;
    return {
      legacyCount: this.requestsTotal.child(legacy),
      legacyDuration: this.requestDuration.child(legacy),
      proxyCount: this.proxyRequests.child(counted),
      proxyFailed: s.status >= 400 ? this.proxyFailedRequests.child(counted) : undefined,
      proxyDuration: this.proxyRequestDuration.child(timed),
      llmCount: s.llm ? this.llmRequests.child(counted) : undefined,
      llmDuration: s.llm ? this.llmRequestDuration.child(timed) : undefined,
      e2eDownstream: this.requestE2eLatency.child({ side: 'downstream', ...side }),
      e2eUpstream: this.requestE2eLatency.child({ side: 'upstream', ...side }),
      ttftDownstream: this.requestTtft.child({ side: 'downstream', ...side }),
      ttftUpstream: this.requestTtft.child({ side: 'upstream', ...side }),
      llmTtftDownstream: s.llm ? this.llmTimeToFirstToken.child({ side: 'downstream', ...detail }) : undefined,
      llmTtftUpstream: s.llm ? this.llmTimeToFirstToken.child({ side: 'upstream', ...detail }) : undefined,
      inputTokens: s.llm ? this.llmInputTokens.child(detail) : undefined,
      outputTokens: s.llm ? this.llmOutputTokens.child(detail) : undefined,
      totalTokens: s.llm ? this.llmTotalTokens.child(detail) : undefined,
      legacyInput: this.tokensTotal.child({ provider: s.provider, model: s.model, token_type: 'input' }),
      legacyOutput: this.tokensTotal.child({ provider: s.provider, model: s.model, token_type: 'output' }),
      cancelled: s.status === 499 ? this.clientCancelled.child(cancelledLabels) : undefined,
    };
  }

  /** Count one emitted usage event. */
  usageEmitted(operation: string, status: number): void {
    const key = `${operation}\u0000${status}`;
    let c = this.usageChildren.get(key);
    if (c === undefined) {
      c = this.usageEventsEmitted.child({ operation, status_class: statusClass(status) });
      this.usageChildren.set(key, c);
    }
    c.inc();
  }
}
