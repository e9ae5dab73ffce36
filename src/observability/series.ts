// Labelled counter and histogram families for the per-request hot path, rendered by prom-client's
// Registry next to its own metrics. They exist because prom-client re-validates and re-hashes the
// label object on every inc()/observe(), labels() children included (about 1 µs per update,
// ~17 µs per request); here child() resolves a label set once and an update is a few arithmetic
// operations on storage allocated with the series.
// The exposition is the one prom-client's Counter/Histogram print for the same updates: series in
// first-update order, labels in the key order of the first child() call, `le` first on buckets.
// A series appears only after its first update, so a child can be made ahead of use.
import { inspect } from 'node:util';
import type { Metric, Registry, RegistryContentType } from 'prom-client';

export type SeriesLabels = Readonly<Record<string, string>>;

export interface SeriesConfig {
  name: string;
  help: string;
  /** At least one: a label-less metric is one series, prom-client's own classes serve it. */
  labelNames: readonly string[];
  registers?: readonly Registry<RegistryContentType>[];
}

export interface SeriesHistogramConfig extends SeriesConfig {
  /** Upper bounds, strictly ascending and finite (`+Inf` is implied); prom-client's defaults when absent. */
  buckets?: readonly number[];
}

/** One counter series. */
export interface CounterChild {
  inc(v?: number): void;
}

/** One histogram series. */
export interface HistogramChild {
  observe(v: number): void;
}

/** A value as prom-client's `getMetricsAsJSON()` and `metrics()` read it. */
export interface SeriesValue {
  value: number;
  labels: Record<string, string | number>;
  metricName?: string;
  sharedLabels?: SeriesLabels;
  exemplar?: null;
}

export interface SeriesMetricObject {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  values: SeriesValue[];
  aggregator: 'sum';
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const PROM_DEFAULT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

abstract class SeriesFamily<S extends { clear(): void }> {
  /** Writable: the registry strips `_total` from counter names when it renders OpenMetrics. */
  name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  readonly aggregator = 'sum' as const;
  abstract readonly type: 'counter' | 'histogram';
  /** Series updated since creation or the last reset, in first-update order (the order printed); a series appends itself. */
  protected readonly live: S[] = [];
  private readonly series = new Map<string, S>();

  constructor(config: SeriesConfig) {
    if (!config.help) throw new Error('Missing mandatory help parameter');
    if (!METRIC_NAME.test(config.name)) throw new Error(`Invalid metric name: ${config.name}`);
    if (config.labelNames.length === 0) throw new Error(`${config.name}: a series family needs at least one label name`);
    for (const l of config.labelNames) if (!LABEL_NAME.test(l)) throw new Error(`${config.name}: invalid label name ${l}`);
    this.name = config.name;
    this.help = config.help;
    this.labelNames = [...config.labelNames];
  }

  /** Register with each registry; called last by the subclass constructor. */
  protected register(registers: readonly Registry<RegistryContentType>[] | undefined): void {
    for (const r of registers ?? []) r.registerMetric(this as unknown as Metric);
  }

  /**
   * The series of one label set, made on first request and shared by every later caller with the
   * same values. Labels must be among the family's label names; a missing one is left out of the
   * series, as prom-client does.
   */
  protected lookup(labels: SeriesLabels): S {
    for (const l in labels) {
      if (!this.labelNames.includes(l)) throw new Error(`Added label "${l}" is not included in initial labelset: ${inspect(this.labelNames)}`);
    }
    // Values joined in label-name order; \u0001 marks an absent label (label values never hold control characters).
    let key = '';
    for (const n of this.labelNames) key += `${labels[n] ?? '\u0001'}\u0000`;
    let s = this.series.get(key);
    if (s === undefined) {
      s = this.make(Object.freeze({ ...labels }));
      this.series.set(key, s);
    }
    return s;
  }

  protected abstract make(labels: SeriesLabels): S;

  /** Zero every series and hide it until its next update; children already handed out stay valid. */
  reset(): void {
    for (const s of this.live) s.clear();
    this.live.length = 0;
  }
}

class CounterSeries implements CounterChild {
  readonly labels: SeriesLabels;
  value = 0;
  private shown = false;
  private readonly live: CounterSeries[];

  constructor(live: CounterSeries[], labels: SeriesLabels) {
    this.live = live;
    this.labels = labels;
  }

  inc(v = 1): void {
    if (!(v >= 0 && v !== Infinity)) throw badIncrement(v);
    this.value += v;
    if (!this.shown) {
      this.shown = true;
      this.live.push(this);
    }
  }

  clear(): void {
    this.value = 0;
    this.shown = false;
  }
}

function badIncrement(v: number): Error {
  return v < 0 ? new Error('It is not possible to decrease a counter') : new TypeError(`Value is not a valid number: ${inspect(v)}`);
}

/** A labelled counter family whose children count without per-call label work. */
export class SeriesCounter extends SeriesFamily<CounterSeries> {
  readonly type = 'counter' as const;

  constructor(config: SeriesConfig) {
    super(config);
    this.register(config.registers);
  }

  child(labels: SeriesLabels): CounterChild {
    return this.lookup(labels);
  }

  /** prom-client's `inc(labels, v)` shape: looks the child up on every call, off the hot path only. */
  inc(labels: SeriesLabels, v = 1): void {
    this.lookup(labels).inc(v);
  }

  protected make(labels: SeriesLabels): CounterSeries {
    return new CounterSeries(this.live, labels);
  }

  get(): Promise<SeriesMetricObject> {
    const values: SeriesValue[] = [];
    for (const s of this.live) values.push({ value: s.value, labels: s.labels });
    return Promise.resolve({ help: this.help, name: this.name, type: this.type, values, aggregator: this.aggregator });
  }
}

class HistogramSeries implements HistogramChild {
  readonly labels: SeriesLabels;
  /** Per bucket (index bounds.length: above the last bound), then sum, then count. */
  readonly data: Float64Array;
  private readonly bounds: Float64Array;
  private shown = false;
  private readonly live: HistogramSeries[];

  constructor(live: HistogramSeries[], labels: SeriesLabels, bounds: Float64Array) {
    this.live = live;
    this.labels = labels;
    this.bounds = bounds;
    this.data = new Float64Array(bounds.length + 3);
  }

  observe(v: number): void {
    if (!Number.isFinite(v)) throw new TypeError(`Value is not a valid number: ${inspect(v)}`);
    const b = this.bounds;
    const n = b.length;
    let i = 0;
    while (i < n && v > b[i]) i++;
    const d = this.data;
    d[i]++;
    d[n + 1] += v;
    d[n + 2]++;
    if (!this.shown) {
      this.shown = true;
      this.live.push(this);
    }
  }

  clear(): void {
    this.data.fill(0);
    this.shown = false;
  }
}

/** A labelled histogram family whose children observe without per-call label work. */
export class SeriesHistogram extends SeriesFamily<HistogramSeries> {
  readonly type = 'histogram' as const;
  /** Upper bounds as given: printed as `le` (same number formatting as prom-client). */
  readonly upperBounds: readonly number[];
  private readonly bounds: Float64Array;

  constructor(config: SeriesHistogramConfig) {
    super(config);
    if (this.labelNames.includes('le')) throw new Error('le is a reserved label keyword');
    const buckets = config.buckets ?? PROM_DEFAULT_BUCKETS;
    for (let i = 0; i < buckets.length; i++) {
      if (!Number.isFinite(buckets[i]) || (i > 0 && buckets[i] <= buckets[i - 1])) {
        throw new Error(`${config.name}: buckets must be finite and strictly ascending`);
      }
    }
    this.upperBounds = Object.freeze([...buckets]);
    this.bounds = Float64Array.from(buckets);
    this.register(config.registers);
  }

  child(labels: SeriesLabels): HistogramChild {
    return this.lookup(labels);
  }

  /** prom-client's `observe(labels, v)` shape: looks the child up on every call, off the hot path only. */
  observe(labels: SeriesLabels, v: number): void {
    this.lookup(labels).observe(v);
  }

  protected make(labels: SeriesLabels): HistogramSeries {
    return new HistogramSeries(this.live, labels, this.bounds);
  }

  /** The values as the registry renders them: the series labels shared, `le` per bucket. */
  getForPromString(): Promise<SeriesMetricObject> {
    const bucket = `${this.name}_bucket`;
    const sum = `${this.name}_sum`;
    const count = `${this.name}_count`;
    const bounds = this.upperBounds;
    const n = bounds.length;
    const values: SeriesValue[] = [];
    for (const s of this.live) {
      const d = s.data;
      const shared = s.labels;
      let acc = 0;
      for (let i = 0; i < n; i++) {
        acc += d[i];
        values.push({ labels: { le: bounds[i] }, sharedLabels: shared, value: acc, metricName: bucket, exemplar: null });
      }
      values.push({ labels: { le: '+Inf' }, sharedLabels: shared, value: d[n + 2], metricName: bucket, exemplar: null });
      values.push({ labels: {}, sharedLabels: shared, value: d[n + 1], metricName: sum, exemplar: undefined });
      values.push({ labels: {}, sharedLabels: shared, value: d[n + 2], metricName: count, exemplar: undefined });
    }
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator });
  }

  /** The values with the series labels merged after `le`, as prom-client's `get()` returns them. */
  async get(): Promise<SeriesMetricObject> {
    const data = await this.getForPromString();
    data.values = data.values.map(({ sharedLabels, labels, ...rest }) => ({ ...rest, labels: { ...labels, ...sharedLabels } }));
    return data;
  }
}
