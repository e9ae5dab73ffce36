// Builds the process's observability sinks from the bootstrap config: the metrics registry
// (name labels, buckets), the usage-event fan-out (stderr lines, the NDJSON file, the OTLP
// exporters of the current resources) and the hooks that keep them in step with reloads.
// The composition root (cli/start.ts) calls this once.
import { createHash } from 'node:crypto';
import { stringify as canonicalJson } from 'safe-stable-stringify';
import type { GatewayConfig } from '../config/schema.ts';
import type { Logger } from './logger.ts';
import { Metrics } from './metrics.ts';
import { FileUsageSink } from './usage-file-sink.ts';
import { LogUsageSink, UsageEmitter, type NamedSink, type UsageSink } from './usage-events.ts';
import { OtlpExporterSet, type OtlpExporterConfig } from './otlp/exporter.ts';

/** The part of an observability_exporters resource the wiring reads. */
export interface ExporterResource {
  name: string;
  kind: string;
  enabled?: boolean;
  endpoint?: string;
  headers?: Record<string, string>;
  sample_rate?: number;
  content_mode?: string;
  content_max_bytes?: number;
}

/** Default `content_max_bytes` (the resource schema's default). */
const DEFAULT_CONTENT_MAX_BYTES = 131072;

export interface ObservabilitySinks {
  metrics: Metrics;
  usage: UsageSink;
  exporters: OtlpExporterSet;
  /** A resource set was applied: reconcile exporters, remember its hash. */
  applied(resources: { observability_exporters: readonly ExporterResource[] }): void;
  /** `sha256:<hex>` of the serving resources. */
  resourcesHash(): string | undefined;
  /** Flush the file sink and the exporters (drain). */
  close(): Promise<void>;
}

export function observabilitySinks(
  config: GatewayConfig['observability'],
  logger: Logger,
  version = '0',
): ObservabilitySinks {
  // The config was validated by loadConfig (buckets, the usage file's writability).
  const file = config.usage_event.file;
  const metrics = new Metrics({ nameLabels: config.metrics.labels, buckets: config.metrics.buckets });
  const rejected = (sink: string, reason: string, events = 1): void => metrics.usageEventsRejected.inc({ sink, reason }, events);
  const sinks: NamedSink[] = config.usage_event.log ? [{ name: 'log', sink: new LogUsageSink(logger, (events, reason) => rejected('log', reason, events)) }] : [];
  let fileSink: FileUsageSink | undefined;
  if (file !== undefined) {
    fileSink = new FileUsageSink(file, {
      onReject: (reason, lines) => rejected('file', reason, lines),
      onError: (err) => logger.error({ path: file, code: (err as NodeJS.ErrnoException).code }, 'usage event file failed: events are no longer written to it'),
    });
    sinks.push({ name: 'file', sink: fileSink });
  }
  const exporters = new OtlpExporterSet(
    {
      exported: (exporter, n) => metrics.otlpExported.inc({ exporter }, n),
      dropped: (exporter, reason, n) => metrics.otlpDrops.inc({ exporter, reason }, n),
      warn: (exporter, message, detail) => logger.warn({ exporter, ...detail }, message),
    },
    {},
    version,
  );
  sinks.push({ name: 'otlp', sink: exporters });
  const usage = new UsageEmitter(sinks, {
    requestHeaders: config.usage_event.request_headers,
    counters: { emitted: (e) => metrics.usageEmitted(e.operation, e.status), rejected },
  });

  let hash: string | undefined;
  const warned = new Set<string>();
  return {
    metrics,
    usage,
    exporters,
    applied(resources) {
      // Keys sorted at every level: the same resources written in another order hash alike.
      hash = `sha256:${createHash('sha256').update(canonicalJson(resources) ?? '').digest('hex')}`;
      metrics.configLastReloadSuccessTimestamp.set(Date.now() / 1000);
      const otlp: OtlpExporterConfig[] = [];
      for (const r of resources.observability_exporters) {
        if (r.enabled === false) continue;
        if (r.kind === 'otlp_http' && r.endpoint !== undefined) {
          otlp.push({
            name: r.name,
            endpoint: r.endpoint,
            headers: r.headers ?? {},
            sampleRate: r.sample_rate ?? 1,
            contentMaxBytes: r.content_mode === 'full' ? (r.content_max_bytes ?? DEFAULT_CONTENT_MAX_BYTES) : 0,
          });
        } else if (!warned.has(r.name)) {
          warned.add(r.name);
          logger.warn({ exporter: r.name, kind: r.kind }, 'observability exporter kind is not supported yet: its events are not exported');
        }
      }
      exporters.update(otlp);
    },
    resourcesHash: () => hash,
    async close() {
      await Promise.all([fileSink?.close(), exporters.close()]);
    },
  };
}
