// `tollgate start`: the composition root. Loads the bootstrap config and resources, builds the
// snapshot, binds the listeners, prints the ready line, and owns reload (SIGHUP) and drain
// (SIGTERM/SIGINT).
import module from 'node:module';
import { fileURLToPath } from 'node:url';
import { parseAddr } from '../config/address.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { formatLoadErrors } from '../resources/issues.ts';
import { formatConfigErrors } from './format-config-errors.ts';
import { bootInChild } from './loader-process.ts';
import { SnapshotHolder } from '../snapshot/snapshot.ts';
import { createReloader } from './reload.ts';
import { createLogger, flushLogger, type Logger } from '../observability/logger.ts';
import { observabilitySinks } from '../observability/wiring.ts';
import { tollgateVersion } from './version.ts';
import { HealthTracker } from '../ai/dispatch/health.ts';
import { healthTargets } from '../ai/dispatch/groups.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { UsageSink } from '../observability/usage-events.ts';
import { createDebugHandler } from '../observability/debug-server.ts';
import { createStatusHandler, type ConfigStatus } from '../observability/status-server.ts';
import { listen, refuseConnect, type Listener } from '../http/server.ts';
import { requestIdFrom } from '../http/request-id.ts';
import { trackRequests } from '../http/drain.ts';
import { createClientIpResolver } from '../http/real-ip.ts';
import { compileUrlRewrites } from '../http/url-rewrite.ts';
import { closeUpstreamPools } from '../http/upstream.ts';
import { waitAtMost } from '../lib/wait-at-most.ts';
import { collectGarbage } from '../lib/collect-garbage.ts';
import { keepTickShape } from '../lib/keep-tick-shape.ts';
import { createLimiter } from '../limits/create.ts';
import { passthroughLimitCheck } from '../limits/passthrough.ts';
import { createListenerAnswerReporter, createProxyHandler, PROXY_METHODS, type Lifecycle } from '../ai/proxy.ts';
import type { Resources } from '../resources/types.ts';

/** Longest wait at shutdown for the limit store to take the last releases and close. */
const LIMITER_CLOSE_MS = 2000;

/**
 * Once the drain is complete the process ends by itself when nothing is left to do. What can hold
 * it is a log reader that stopped reading (the last log batch waits for room in the pipe): this
 * long after the drain the process exits, and the exit writes what the log still holds, waiting
 * for the reader while it takes bytes (LineBatcher.flushSync).
 */
const EXIT_AFTER_DRAIN_MS = 3000;

export const DEMO_RESOURCES = fileURLToPath(new URL('../../examples/demo.resources.yaml', import.meta.url));

function counts(r: Resources): Record<string, number> {
  return Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Array.isArray(v) ? v.length : 0]));
}

export async function startCommand(opts: { configFile: string | undefined }): Promise<number> {
  // First, before any full collection: one nextTick record held for good keeps the records'
  // shapes through every collection (src/lib/keep-tick-shape.ts).
  await keepTickShape();
  // Config and resources are loaded in a child process: see loader-process.ts.
  const first = await bootInChild(opts.configFile, DEMO_RESOURCES);
  if (!first.ok) {
    if (first.stage === 'config') process.stderr.write(formatConfigErrors(first.errors) + '\n');
    else if (first.stage === 'resources') process.stderr.write(formatLoadErrors(first.resourcesFile, first.errors) + '\n');
    else process.stderr.write(`tollgate: ${first.errors[0]}\n`);
    return 1;
  }
  const { config, resourcesFile } = first;
  const logger = createLogger(config.observability.log_level);
  const obs = observabilitySinks(config.observability, logger, tollgateVersion());
  const { metrics, usage } = obs;
  const snapshots = new SnapshotHolder();
  const health = new HealthTracker({ now: Date.now });
  const limiter = await createLimiter(config.ratelimit, { metrics, logger });
  const lifecycle: Lifecycle = { ready: false, draining: false };
  let lastReload: ConfigStatus['last_reload'];
  const apply = (resources: Resources, count: number): void => {
    const s = snapshots.install(resources, count);
    // Health follows targets across reloads; removed models and group targets are forgotten.
    health.retain(healthTargets(s));
    lifecycle.ready = true;
    metrics.configGeneration.set(s.generation);
    metrics.configLastReloadSuccessful.set(1);
    obs.applied(resources);
  };
  apply(first.resources, first.count);
  if (config.resources_file === undefined) {
    logger.warn({ resources_file: resourcesFile }, 'no resources_file configured: serving the built-in demo resources');
  }

  const listeners: Listener[] = [];
  const closing = (): boolean => lifecycle.draining;
  // Every listener is tried, so one start names every address in use; each failure names the
  // key to change.
  const bindFailures: string[] = [];
  const bind = async <T>(what: string, open: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await open();
    } catch (err) {
      bindFailures.push(`tollgate: cannot bind the ${what}: ${(err as Error).message}`);
      return undefined;
    }
  };
  const keep = (l: Listener | undefined): void => {
    if (l !== undefined) listeners.push(l);
  };
  const onCut = (): void => {
    lifecycle.cutting = true;
  };
  const proxy = { ...proxyOptions(config, snapshots, lifecycle, logger, metrics, health, usage), limits: limiter, passthroughHooks: { admit: [passthroughLimitCheck(limiter)], respond: [] } };
  keep(await bind('proxy listener (proxy.addr)', () => listen({ name: 'proxy', ...parseAddr(config.proxy.addr), methods: PROXY_METHODS, requestIdOf: (headers) => requestIdFrom(headers, proxy.requestIdHeaders), closing, onCut, requestTimeoutMs: config.proxy.request_timeout_ms, handler: createProxyHandler(proxy), onListenerAnswer: createListenerAnswerReporter(proxy), bodyLimitBytes: proxy.bodyLimitBytes })));
  const prom = config.observability.metrics.prometheus;
  if (prom.enabled) {
    const status = (): ConfigStatus => ({
      source: { type: 'file', path: resourcesFile },
      generation: snapshots.current?.generation ?? 0,
      applied_at: snapshots.current === undefined ? undefined : new Date(snapshots.current.createdAt).toISOString(),
      resource_counts: snapshots.current === undefined ? {} : counts(snapshots.current.resources),
      last_reload: lastReload,
      revision: snapshots.current?.generation ?? 0,
      hash: obs.resourcesHash(),
      rejected_resources: lastReload?.ok === false ? (lastReload.errors ?? []).map((error) => ({ error })) : [],
    });
    const handler = createStatusHandler(metrics, prom.path, { '/status/config': status, '/status/models': () => modelStatus(health, snapshots) });
    keep(await bind('metrics listener (observability.metrics.prometheus.addr)', () => listen({ name: 'metrics', ...parseAddr(prom.addr), handler })));
  }
  const debug = config.observability.debug;
  if (debug.enabled) keep(await bind('debug listener (observability.debug.addr)', () => listen({ name: 'debug', ...parseAddr(debug.addr), handler: createDebugHandler(debug.path) })));
  const admin = config.admin.enabled ? await bind('admin listener (admin.addr)', () => startAdmin(config, () => ({ generation: snapshots.current?.generation ?? 0 }), closing)) : undefined;
  if (bindFailures.length > 0) {
    for (const l of listeners) l.server.close();
    await admin?.app.close();
    process.stderr.write(bindFailures.join('\n') + '\n');
    return 1;
  }

  // Signal handlers go in before the ready line: a signal sent the moment it is read must drain
  // or reload, not meet the default action (terminate).
  // Set once the sinks are closed at shutdown: a reload finishing after that is dropped.
  let shutDown = false;
  const reloader = createReloader(resourcesFile, (result) => {
    if (shutDown) return;
    const at = new Date().toISOString();
    if (result.ok) {
      apply(result.resources, result.count);
      lastReload = { at, ok: true };
      metrics.configReloads.inc({ result: 'success' });
      logger.info({ generation: snapshots.current?.generation, resources: result.count }, 'resources reloaded');
    } else {
      lastReload = { at, ok: false, errors: result.errors };
      metrics.configReloads.inc({ result: 'failure' });
      metrics.configLastReloadSuccessful.set(0);
      logger.error(
        { errors: result.errors, report: formatLoadErrors(resourcesFile, result.errors) },
        'resources file reload failed; keeping the previous snapshot',
      );
    }
    flushLogger(logger);
  });
  process.on('SIGHUP', () => {
    if (lifecycle.draining) {
      logger.info({ signal: 'SIGHUP' }, 'draining: SIGHUP ignored, resources not reloaded');
      flushLogger(logger);
      return;
    }
    reloader.request();
  });
  const stopped = new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: string): void => {
      if (stopping) {
        logger.warn({ signal }, 'second signal: exiting without waiting for in-flight requests');
        flushLogger(logger);
        process.exit(1);
      }
      stopping = true;
      lifecycle.draining = true;
      reloader.close();
      logger.info({ signal, min_drain_secs: config.shutdown.min_drain_secs }, 'draining');
      flushLogger(logger);
      setTimeout(() => {
        void drain(admin === undefined ? listeners : [...listeners, { name: 'admin', drain: admin.drain }], config, logger).then(async () => {
          closeUpstreamPools();
          shutDown = true;
          // The limit releases of the requests drain cut reach a shared store before it closes;
          // an unreachable store does not hold the exit.
          await Promise.all([waitAtMost(limiter.close(), LIMITER_CLOSE_MS), obs.close()]);
          logger.info('drain complete');
          flushLogger(logger);
          setTimeout(() => process.exit(0), EXIT_AFTER_DRAIN_MS).unref();
          resolve(0);
        });
      }, config.shutdown.min_drain_secs * 1000);
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
  });

  // Boot is done: one full collection now sets V8's first old-generation trigger from the live
  // heap (src/lib/collect-garbage.ts), which keeps the peak under load ~15 MiB lower.
  collectGarbage();
  const addresses: Record<string, string> = {};
  for (const l of listeners) addresses[l.name] = l.address;
  if (admin !== undefined) addresses.admin = admin.address;
  // The ready line is for whoever started the process; if nobody reads stdout any more (a closed
  // pipe: EPIPE), the gateway keeps serving rather than dying on an unhandled stream error.
  process.stdout.on('error', () => {});
  process.stdout.write(JSON.stringify({ event: 'ready', listeners: addresses, pid: process.pid }) + '\n');
  logger.info({ listeners: addresses, resources_file: resourcesFile, resources: first.count }, 'tollgate started');
  // Lifecycle lines are flushed at once; only the per-request stream is batched.
  flushLogger(logger);
  // Everything the serving path loads is loaded: persist the compile cache now (when the launcher
  // enabled it) rather than at exit, which a killed process never reaches.
  module.flushCompileCache?.();
  return stopped;
}

/** Every listener, the admin one included, drains at once under the same timeout. */
async function drain(listeners: Array<Pick<Listener, 'name' | 'drain'>>, config: GatewayConfig, logger: Logger): Promise<void> {
  const timeoutMs = config.shutdown.drain_timeout_secs * 1000;
  const results = await Promise.all(listeners.map(async (l) => ({ name: l.name, ...(await l.drain(timeoutMs)) })));
  for (const r of results) {
    if (r.timedOut) logger.warn({ listener: r.name }, 'drain timeout reached: closing remaining connections');
  }
}

function proxyOptions(config: GatewayConfig, snapshots: SnapshotHolder, lifecycle: Lifecycle, logger: Logger, metrics: Metrics, health: HealthTracker, usage: UsageSink) {
  return {
    snapshots,
    lifecycle,
    logger,
    metrics,
    usage,
    health,
    accessLog: config.observability.access_log,
    bodyLimitBytes: config.proxy.request_body_limit_bytes,
    requestTimeoutMs: config.proxy.request_timeout_ms,
    sendTimeoutMs: config.proxy.send_timeout_ms,
    maxInFlight: config.proxy.max_in_flight_requests,
    requestIdHeaders: config.proxy.request_id.accept_headers,
    clientIp: createClientIpResolver(config.proxy.real_ip),
    realIpHeader: config.proxy.real_ip.header,
    // No rules: no rewriter at all, so the request path pays nothing.
    rewriteUrl: config.proxy.url_rewrites.length > 0 ? compileUrlRewrites(config.proxy.url_rewrites) : undefined,
    upstream: {
      timeoutMs: config.upstream.timeout_ms,
      streamTimeoutMs: config.upstream.stream_timeout_ms,
      connectTimeoutMs: config.upstream.connect_timeout_ms,
      retries: config.upstream.retries,
    },
  };
}

async function startAdmin(config: GatewayConfig, status: () => { generation: number }, closing: () => boolean) {
  // Loaded only when the admin listener is on: fastify and its plugins are memory (with the Redis
  // client, ~8 MiB of resident memory) a proxy-only process never uses.
  const { buildAdminApp } = await import('../admin/app.ts');
  const app = buildAdminApp({ adminKeys: config.admin.admin_keys, status });
  // Counted before it serves anything, so a shutdown drains admin requests like proxy ones.
  const { drain } = trackRequests(app.server, { closing });
  refuseConnect(app.server, 'GET, HEAD');
  const { host, port } = parseAddr(config.admin.addr);
  await app.listen({ host, port });
  const info = app.server.address();
  const bound = typeof info === 'object' && info !== null ? `${info.family === 'IPv6' ? `[${info.address}]` : info.address}:${info.port}` : config.admin.addr;
  return { app, address: bound, drain };
}

/**
 * `/status/models`: per-target health (cooldowns, failures, in-flight, latency) of every target
 * the serving configuration routes to, whether or not it has had traffic (a group is not a target:
 * its members are). A group target served by a wildcard model is keyed `<model id>#<upstream
 * model>`: its row names the wildcard model and the upstream model it resolved to.
 */
function modelStatus(health: HealthTracker, snapshots: SnapshotHolder) {
  const current = snapshots.current;
  const targets = current === undefined ? undefined : healthTargets(current);
  const keys: string[] = [];
  if (targets !== undefined) for (const [key, t] of targets) if (!t.group) keys.push(key);
  return {
    models: health.snapshot(keys).map((row) => {
      const t = targets?.get(row.key);
      return { model: t?.model ?? null, upstream_model: t?.upstreamModel ?? null, ...row };
    }),
  };
}
