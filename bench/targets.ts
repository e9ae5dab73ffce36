// Starting and stopping the processes of a benchmark run: the mock upstream, the minimal proxy
// and Tollgate, each pinned to its core, each announcing readiness as one JSON line on stdout
// (`{"event":"ready","listeners":{...}}`). Also writes Tollgate's bootstrap config and
// resources file, and checks each target answers the workload correctly before it is loaded.

import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { processTree } from './procstat.ts';
import { BENCH_MODEL, CHAT_PATH, UPSTREAM_MODEL, checkReply } from './workload.ts';

export interface Spawned {
  name: string;
  pid: number;
  /** host:port of the listener named when starting. */
  addr: string;
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
  const nodeArgs = [process.execPath, ...spec.args];
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
          stdoutBytesAfterReady: () => afterReady,
          stderrBytes: () => stderrBytes,
          stderrTail: () => stderr,
          stop,
        });
      }
    });
  });
}

export interface TollgateFiles {
  configPath: string;
  /** The caller key Tollgate reads from BENCH_KEY. */
  key: string;
}

/** Writes Tollgate's config.yaml and resources.yaml into dir, pointing at the mock upstream. */
export function writeTollgateConfig(dir: string, mockAddr: string): TollgateFiles {
  const resourcesPath = join(dir, 'resources.yaml');
  const configPath = join(dir, 'config.yaml');
  const resources = {
    _format_version: '1',
    provider_keys: [
      { display_name: 'bench', provider: 'openai', api_key: 'x', api_base: `http://${mockAddr}/v1` },
    ],
    models: [
      { display_name: BENCH_MODEL, provider: 'openai', model_name: UPSTREAM_MODEL, provider_key: 'bench' },
    ],
    api_keys: [{ display_name: 'bench', key_env: 'BENCH_KEY', allowed_models: [BENCH_MODEL] }],
  };
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
