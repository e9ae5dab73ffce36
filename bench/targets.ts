// Starting and stopping the processes of a benchmark run: the mock upstream, the minimal proxy
// and Tollgate, each pinned to its core, each announcing readiness as one JSON line on stdout
// (`{"event":"ready","listeners":{...}}`). Also writes Tollgate's bootstrap config and
// resources file for each Tollgate target (the performance-bar one, and the observability
// all-on / all-off pair), and checks each target answers the workload correctly before it is
// loaded.

import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { processTree } from './procstat.ts';
import { TRACES_PATH } from './null-collector.ts';
import { BENCH_MODEL, CHAT_PATH, CLIENT_HEADERS, UPSTREAM_MODEL, checkReply } from './workload.ts';

export interface Spawned {
  name: string;
  pid: number;
  /** host:port of the listener named when starting. */
  addr: string;
  /** Every listener of the ready line, by name (Tollgate: proxy, metrics, ...). */
  listeners: Readonly<Record<string, unknown>>;
  /** Bytes the process wrote to stdout after its ready line (access log, if it goes there). */
  stdoutBytesAfterReady(): number;
  /** Bytes written to stderr so far (logs, if they go there). */
  stderrBytes(): number;
  /** The last few KiB of stderr, for diagnostics. */
  stderrTail(): string;
  stop(): Promise<void>;
}

export interface SpawnSpec {
  name: string;
  /** Node script and its arguments, run with this Node (process.execPath). */
  args: string[];
  /** taskset -c value, or null for no pinning. */
  cpus: string | null;
  /** A command Node runs under, with its options (e.g. `valgrind --tool=callgrind`). */
  wrapper?: string[];
  /** Which `listeners` entry of the ready line is the address to load. */
  listener: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  readyTimeoutMs: number;
}

const TAIL = 8192;

interface ReadyLine {
  event?: unknown;
  listeners?: Record<string, unknown>;
}

function appendTail(tail: string, chunk: string): string {
  const s = tail + chunk;
  return s.length > TAIL ? s.slice(s.length - TAIL) : s;
}

/** Spawns a Node process and resolves when it printed its ready line; rejects with its stderr. */
export function spawnReady(spec: SpawnSpec): Promise<Spawned> {
  const nodeArgs = [...(spec.wrapper ?? []), process.execPath, ...spec.args];
  const [cmd, argv] =
    spec.cpus === null ? [nodeArgs[0], nodeArgs.slice(1)] : ['taskset', ['-c', spec.cpus, ...nodeArgs]];
  const child: ChildProcess = spawn(cmd, argv, {
    cwd: spec.cwd,
    env: spec.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdoutHead = '';
  let stderr = '';
  let stderrBytes = 0;
  let afterReady = -1;
  let exited: string | null = null;
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (d: string) => {
    stderrBytes += Buffer.byteLength(d);
    stderr = appendTail(stderr, d);
  });

  const stop = async (): Promise<void> => {
    if (exited !== null || child.pid === undefined) return;
    // Forked workers are ours too: remember them before the parent goes.
    const tree = processTree(child.pid).map((s) => s.pid);
    const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 3000));
    const ok = await Promise.race([gone.then(() => true), timer]);
    if (!ok) child.kill('SIGKILL');
    for (const pid of tree) {
      if (pid === child.pid) continue;
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already exited
      }
    }
  };

  return new Promise<Spawned>((resolve, reject) => {
    const why = (msg: string): Error =>
      new Error(`${spec.name}: ${msg}\n--- stderr (tail) ---\n${stderr.trim()}\n--- stdout (head) ---\n${stdoutHead.slice(0, 2000).trim()}`);
    const timer = setTimeout(() => {
      void stop();
      reject(why(`not ready within ${spec.readyTimeoutMs} ms`));
    }, spec.readyTimeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(why(`cannot start: ${e.message}`));
    });
    child.on('exit', (code, signal) => {
      exited = `exit ${code ?? signal}`;
      if (afterReady < 0) {
        clearTimeout(timer);
        // Let the last stderr chunk arrive before reporting.
        setTimeout(() => reject(why(`exited before ready (${exited})`)), 100);
      }
    });
    child.stdout!.on('data', (d: Buffer) => {
      if (afterReady >= 0) {
        afterReady += d.length;
        return;
      }
      stdoutHead += d.toString('utf8');
      let nl: number;
      while ((nl = stdoutHead.indexOf('\n')) >= 0 && afterReady < 0) {
        const line = stdoutHead.slice(0, nl).trim();
        stdoutHead = stdoutHead.slice(nl + 1);
        let msg: ReadyLine | null;
        try {
          msg = JSON.parse(line) as ReadyLine | null;
        } catch {
          continue; // a log line before the ready line
        }
        if (msg?.event !== 'ready') continue;
        const addr = msg.listeners?.[spec.listener];
        clearTimeout(timer);
        if (typeof addr !== 'string' || !/^127\.0\.0\.1:\d+$/.test(addr)) {
          void stop();
          reject(why(`ready line has no 127.0.0.1 listeners.${spec.listener}: ${line}`));
          return;
        }
        afterReady = Buffer.byteLength(stdoutHead);
        resolve({
          name: spec.name,
          pid: child.pid!,
          addr,
          listeners: { ...msg.listeners },
          stdoutBytesAfterReady: () => afterReady,
          stderrBytes: () => stderrBytes,
          stderrTail: () => stderr,
          stop,
        });
      }
    });
  });
}

/** How `npm start` runs Tollgate: node flags and the entry script, from package.json's `start`. */
export interface TollgateLaunch {
  nodeFlags: string[];
  /** Absolute path of the entry script. */
  entry: string;
  /** Environment variables the script sets ahead of `node` (`NAME=value ...`). */
  env: Record<string, string>;
}

/**
 * Reads `scripts.start` of repo's package.json (`[NAME=value ...] node [flags] <entry> start`), so
 * the bench runs Tollgate exactly as users start it (environment, launcher, V8 flags); null when
 * there is no such script.
 */
export function tollgateLaunch(repo: string): TollgateLaunch | null {
  const pkgPath = join(repo, 'package.json');
  if (!existsSync(pkgPath)) return null;
  const start = (JSON.parse(readFileSync(pkgPath, 'utf8')) as { scripts?: { start?: string } }).scripts?.start;
  const words = start?.trim().split(/\s+/) ?? [];
  const env: Record<string, string> = {};
  while (words.length > 0 && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0])) {
    const w = words.shift()!;
    env[w.slice(0, w.indexOf('='))] = w.slice(w.indexOf('=') + 1);
  }
  // `exec` makes node replace npm's shell, so a signal to npm start reaches the gateway.
  if (words[0] === 'exec') words.shift();
  if (words[0] !== 'node' || words.at(-1) !== 'start' || words.length < 3) return null;
  const entry = join(repo, words.at(-2)!);
  return existsSync(entry) ? { nodeFlags: words.slice(1, -2), entry, env } : null;
}

/**
 * Starts Tollgate once and stops it, so the launcher's compile cache holds every module before a
 * measured process starts (as on any machine after the first start).
 */
export async function warmTollgate(launch: TollgateLaunch, repo: string, configPath: string, env: NodeJS.ProcessEnv): Promise<void> {
  const p = await spawnReady({
    name: 'tollgate (compile-cache warmup)',
    args: [...launch.nodeFlags, launch.entry, 'start', '--config', configPath],
    cwd: repo,
    env: { ...env, ...launch.env },
    cpus: null,
    listener: 'proxy',
    readyTimeoutMs: 30_000,
  });
  await p.stop();
}

export interface TollgateFiles {
  configPath: string;
  /** The caller key Tollgate reads from BENCH_KEY. */
  key: string;
}

/** The resources every Tollgate target serves: one provider key on the mock, one alias, one caller key. */
function benchResources(mockAddr: string): Record<string, unknown> & { api_keys: Record<string, unknown>[] } {
  return {
    _format_version: '1',
    provider_keys: [
      { display_name: 'bench', provider: 'openai', api_key: 'x', api_base: `http://${mockAddr}/v1` },
    ],
    models: [
      { display_name: BENCH_MODEL, provider: 'openai', model_name: UPSTREAM_MODEL, provider_key: 'bench' },
    ],
    api_keys: [{ display_name: 'bench', key_env: 'BENCH_KEY', allowed_models: [BENCH_MODEL] }],
  };
}

/** Writes Tollgate's config.yaml and resources.yaml into dir, pointing at the mock upstream. */
export function writeTollgateConfig(dir: string, mockAddr: string): TollgateFiles {
  const resourcesPath = join(dir, 'resources.yaml');
  const configPath = join(dir, 'config.yaml');
  const resources = benchResources(mockAddr);
  // Everything the performance bar names is on: auth, aliasing, usage tap, metrics, access log.
  const config = {
    resources_file: resourcesPath,
    proxy: { addr: '127.0.0.1:0' },
    observability: {
      log_level: 'info',
      access_log: true,
      metrics: { prometheus: { enabled: true, addr: '127.0.0.1:0' } },
    },
  };
  writeFileSync(resourcesPath, stringify(resources));
  writeFileSync(configPath, stringify(config));
  return { configPath, key: `tg-bench-${randomBytes(16).toString('hex')}` };
}

export interface ObsConfigFiles {
  configPath: string;
  resourcesPath: string;
  /** The NDJSON usage-event file, when the target writes one. */
  usageFile: string | null;
}

/** Request headers the all-on target copies into every usage event (the workload sends both). */
export const CAPTURED_HEADERS: readonly string[] = Object.keys(CLIENT_HEADERS);

/** Name of the OTLP exporter resource of the all-on target (a metrics label value). */
export const OBS_EXPORTER_NAME = 'bench-collector';

function writeObsFiles(dir: string, resources: object, config: Record<string, unknown>, usageFile: string | null): ObsConfigFiles {
  mkdirSync(dir, { recursive: true });
  const resourcesPath = join(dir, 'resources.yaml');
  const configPath = join(dir, 'config.yaml');
  writeFileSync(resourcesPath, stringify(resources));
  writeFileSync(configPath, stringify({ resources_file: resourcesPath, ...config }));
  return { configPath, resourcesPath, usageFile };
}

/**
 * The observability pair serves the same resources, the caller key carrying a team and a user
 * so the name labels of the all-on target hold real values; both read the key from BENCH_KEY,
 * like writeTollgateConfig's.
 */
function obsResources(mockAddr: string): ReturnType<typeof benchResources> {
  const resources = benchResources(mockAddr);
  Object.assign(resources.api_keys[0], { team_id: 'bench-team', user_id: 'bench-user-id', user_name: 'bench-user' });
  return resources;
}

/** The sinks of the all-on target that can be left out, to measure one feature at a time. */
export interface ObsFullSinks {
  /** The NDJSON usage-event file. */
  file: boolean;
  /** The otlp_http exporter. */
  exporter: boolean;
}

/**
 * Every observability feature on (the "observability on"), in dir: the access log, the
 * Prometheus listener with every optional name label, usage events to an NDJSON file in dir
 * with request headers captured, and an otlp_http exporter (metadata only, every request
 * sampled) shipping to the null collector at collectorAddr. The debug listener stays as it
 * defaults (off). `policy_name` stays `unknown`: a rate-limit policy would add limit work the
 * all-off target does not do. `sinks` leaves out the file or the exporter (both on by default).
 */
export function writeTollgateObsFullConfig(
  dir: string,
  mockAddr: string,
  collectorAddr: string,
  sinks: ObsFullSinks = { file: true, exporter: true },
): ObsConfigFiles {
  const usageFile = sinks.file ? join(dir, 'usage.ndjson') : null;
  const exporters = [
    {
      name: OBS_EXPORTER_NAME,
      kind: 'otlp_http',
      endpoint: `http://${collectorAddr}${TRACES_PATH}`,
      content_mode: 'metadata_only',
      sample_rate: 1,
    },
  ];
  const resources = { ...obsResources(mockAddr), observability_exporters: sinks.exporter ? exporters : [] };
  const config = {
    proxy: { addr: '127.0.0.1:0' },
    observability: {
      log_level: 'info',
      access_log: true,
      metrics: {
        prometheus: { enabled: true, addr: '127.0.0.1:0' },
        labels: { api_key_name: true, team_name: true, provider_key_name: true, policy_name: true, user_name: true },
      },
      usage_event: { request_headers: [...CAPTURED_HEADERS], ...(usageFile === null ? {} : { file: usageFile }) },
    },
  };
  return writeObsFiles(dir, resources, config, usageFile);
}

/**
 * Every observability feature that can be turned off, off (the "observability off"), in
 * dir: no access log, no metrics listener, no exporter, no usage file, no usage lines on
 * stderr. What cannot be turned off stays: the usage tap and the in-process metric updates.
 */
export function writeTollgateObsOffConfig(dir: string, mockAddr: string): ObsConfigFiles {
  const config = {
    proxy: { addr: '127.0.0.1:0' },
    observability: {
      log_level: 'info',
      access_log: false,
      metrics: { prometheus: { enabled: false } },
      usage_event: { log: false },
    },
  };
  return writeObsFiles(dir, obsResources(mockAddr), config, null);
}

/** One request to the target; null when the reply is what the workload expects, else why not. */
export function smokeCheck(addr: string, body: string, stream: boolean, headers: Record<string, string>): Promise<string | null> {
  return new Promise((resolve) => {
    const payload = Buffer.from(body);
    const req = http.request(
      `http://${addr}${CHAT_PATH}`,
      {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'content-length': String(payload.length) },
        agent: false,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve(checkReply(stream, res.statusCode ?? 0, text)));
        res.on('error', (e) => resolve(`reply error: ${e.message}`));
      },
    );
    req.setTimeout(5000, () => req.destroy(new Error('no reply within 5 s')));
    req.on('error', (e) => resolve(`request error: ${e.message}`));
    req.end(payload);
  });
}
