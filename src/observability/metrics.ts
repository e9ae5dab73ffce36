// Every Prometheus metric Tollgate exports is defined here, on one registry per process.
// Label values are bounded: route templates, model aliases from the snapshot, `unknown` never empty.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export class Metrics {
  readonly registry = new Registry();

  readonly requestsTotal = new Counter({
    name: 'tollgate_requests_total',
    help: 'Requests answered by the proxy listener.',
    labelNames: ['endpoint', 'provider', 'model', 'status'] as const,
    registers: [this.registry],
  });

  readonly requestDuration = new Histogram({
    name: 'tollgate_request_duration_seconds',
    help: 'Time from request received to response body finished, proxy listener.',
    labelNames: ['endpoint', 'provider', 'model', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600],
    registers: [this.registry],
  });

  readonly tokensTotal = new Counter({
    name: 'tollgate_tokens_consumed_total',
    help: 'Tokens reported by upstream providers.',
    labelNames: ['provider', 'model', 'token_type'] as const,
    registers: [this.registry],
  });

  readonly inFlight = new Gauge({
    name: 'tollgate_proxy_in_flight_requests',
    help: 'Requests in flight on the proxy listener.',
    registers: [this.registry],
  });

  readonly configReloads = new Counter({
    name: 'tollgate_config_reloads_total',
    help: 'Resource reloads by result.',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  readonly configLastReloadSuccessful = new Gauge({
    name: 'tollgate_config_last_reload_successful',
    help: '1 when the last resource load or reload succeeded, else 0.',
    registers: [this.registry],
  });

  readonly configGeneration = new Gauge({
    name: 'tollgate_config_generation',
    help: 'Generation of the snapshot currently serving.',
    registers: [this.registry],
  });

  private readonly requestChildren = new Map<string, { count: { inc(): void }; duration: { observe(v: number): void } }>();

  /**
   * Count one answered request. Label children are cached per label combination (all values
   * are bounded), which spares prom-client's label hashing on every request.
   */
  observeRequest(endpoint: string, provider: string, model: string, status: number, seconds: number): void {
    const key = `${endpoint}\u0000${provider}\u0000${model}\u0000${status}`;
    let child = this.requestChildren.get(key);
    if (child === undefined) {
      const labels = { endpoint, provider, model, status: String(status) };
      child = { count: this.requestsTotal.labels(labels), duration: this.requestDuration.labels(labels) };
      this.requestChildren.set(key, child);
    }
    child.count.inc();
    child.duration.observe(seconds);
  }

  constructor(options: { processMetrics?: boolean } = {}) {
    if (options.processMetrics !== false) collectDefaultMetrics({ register: this.registry, prefix: 'tollgate_' });
  }
}
