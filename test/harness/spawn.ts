// Starts the real Tollgate CLI for e2e tests: writes config and resources into a fresh temp dir,
// spawns `node src/main.ts start`, and waits for the one JSON "ready" line that names the bound
// listeners. Also runs one-shot CLI commands (`runCli`).

import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const mainTs = path.join(repoRoot, 'src', 'main.ts');

// A boot takes about a second; the bound only catches a gateway that never gets ready. It is
// wide because CI shares a virtual machine whose host can take most of a core away (a boot under
// 97% hypervisor steal, two test files at once, took over 15 s).
const READY_TIMEOUT_MS = 30_000;
const KILL_AFTER_MS = 10_000;
const RUN_CLI_TIMEOUT_MS = 30_000;

export interface Gateway {
  /** http://host:port of the proxy listener; '' when the proxy listener is disabled. */
  proxyUrl: string;
  metricsUrl?: string;
  adminUrl?: string;
  proc: ChildProcess;
  /** Every stdout line so far (the ready line included). */
  stdout: string[];
  stderrText(): string;
  signal(sig: NodeJS.Signals): void;
  exited: Promise<{ code: number | null; signal: string | null }>;
  /** SIGTERM, then SIGKILL after 10 s; resolves once the process exited. Removes the temp dir. */
  stop(): Promise<void>;
  /** The temp dir holding the written files, and their paths (for reload tests that rewrite them). */
  dir: string;
  configPath: string;
  resourcesPath?: string;
}

export interface StartOptions {
  /** An object is written as YAML; a string is written as is. */
  config: object | string;
  /** Written next to the config; with an object config, `resources_file` is set to its path. */
  resources?: object | string;
  env?: Record<string, string>;
  /** Working directory of the process (default: the repo root). */
  cwd?: string;
}

/** The parent's environment minus TOLLGATE_* (so a developer's shell cannot leak into tests), plus extra. */
function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    // NODE_TEST_CONTEXT makes a node:test child report to its parent over stdout; the CLI is not one.
    if (k.startsWith('TOLLGATE_') || k === 'NODE_TEST_CONTEXT') continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

function toText(doc: object | string): string {
  return typeof doc === 'string' ? doc : YAML.stringify(doc);
}

/** "127.0.0.1:8080" / "[::1]:8080" / "0.0.0.0:8080" → a URL a client on this machine can reach. */
function listenerUrl(addr: unknown): string | undefined {
  if (typeof addr !== 'string' || addr === '') return undefined;
  if (/^https?:\/\//.test(addr)) return addr;
  const m = /^(.*):(\d+)$/.exec(addr);
  if (!m) return `http://${addr}`;
  let host = m[1];
  if (host === '0.0.0.0' || host === '' || host === '*') host = '127.0.0.1';
  else if (host === '::' || host === '[::]') host = '[::1]';
  else if (host.includes(':') && !host.startsWith('[')) host = `[${host}]`;
  return `http://${host}:${m[2]}`;
}

// Gateways a test forgot to stop must not outlive the test process.
const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

export async function startGateway(opts: StartOptions): Promise<Gateway> {
  const dir = fs.mkdtempSync(os.tmpdir() + '/tollgate-');
  let resourcesPath: string | undefined;
  if (opts.resources !== undefined) {
    resourcesPath = path.join(dir, 'resources.yaml');
    fs.writeFileSync(resourcesPath, toText(opts.resources));
  }
  const config =
    typeof opts.config === 'string' || resourcesPath === undefined
      ? opts.config
      : { ...opts.config, resources_file: resourcesPath };
  const configPath = path.join(dir, 'config.yaml');
  fs.writeFileSync(configPath, toText(config));

  const proc = spawn(process.execPath, [mainTs, 'start', '--config', configPath], {
    cwd: opts.cwd ?? repoRoot,
    env: childEnv(opts.env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(proc);

  const stdout: string[] = [];
  const stderr: string[] = [];
  const stderrText = () => stderr.join('');
  proc.stderr!.setEncoding('utf8');
  proc.stderr!.on('data', (c: string) => stderr.push(c));

  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
    proc.once('exit', (code, signal) => {
      live.delete(proc);
      // 'exit' can fire before the last stderr bytes are read (a loaded machine): what the process
      // wrote is all in stderrText() once `exited` resolves, unless the pipe stays open 2 s more
      // (or a test holds stderr paused, reading it itself).
      const done = (): void => resolve({ code, signal });
      const err = proc.stderr!;
      if (err.readableEnded || err.destroyed || err.isPaused()) return done();
      const t = setTimeout(done, 2000);
      err.once('end', () => {
        clearTimeout(t);
        done();
      });
      err.once('close', () => {
        clearTimeout(t);
        done();
      });
    });
    // A spawn failure may never emit 'exit'.
    proc.once('error', () => {
      live.delete(proc);
      resolve({ code: proc.exitCode, signal: proc.signalCode });
    });
  });

  let onReady: (msg: Record<string, any>) => void = () => {};
  const ready = new Promise<Record<string, any>>((resolve) => (onReady = resolve));
  let partial = '';
  proc.stdout!.setEncoding('utf8');
  proc.stdout!.on('data', (c: string) => {
    partial += c;
    let nl: number;
    while ((nl = partial.indexOf('\n')) >= 0) {
      const line = partial.slice(0, nl).replace(/\r$/, '');
      partial = partial.slice(nl + 1);
      stdout.push(line);
      if (!line.startsWith('{')) continue;
      try {
        const msg = JSON.parse(line);
        if (msg?.event === 'ready') onReady(msg);
      } catch {
        // a log line that merely looks like JSON
      }
    }
  });

  let spawnError: Error | undefined;
  proc.once('error', (err) => (spawnError = err));

  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), READY_TIMEOUT_MS)));
  const outcome = await Promise.race([ready, exited.then((e) => ({ exited: e })), timeout]);
  clearTimeout(timer);

  const describe = () =>
    `config: ${configPath}\n--- stderr ---\n${stderrText()}\n--- stdout ---\n${[...stdout, partial].join('\n')}`;
  if (outcome === 'timeout') {
    proc.kill('SIGKILL');
    await exited;
    throw new Error(`tollgate did not print its ready line within ${READY_TIMEOUT_MS} ms\n${describe()}`);
  }
  if ('exited' in outcome) {
    const why = spawnError ? `failed to spawn: ${spawnError.message}` : `exited (code ${outcome.exited.code}, signal ${outcome.exited.signal})`;
    throw new Error(`tollgate ${why} before it was ready\n${describe()}`);
  }

  const listeners: Record<string, unknown> = outcome.listeners ?? {};
  let stopping: Promise<void> | undefined;
  return {
    proxyUrl: listenerUrl(listeners.proxy) ?? '',
    metricsUrl: listenerUrl(listeners.metrics),
    adminUrl: listenerUrl(listeners.admin),
    proc,
    stdout,
    stderrText,
    exited,
    dir,
    configPath,
    resourcesPath,
    signal(sig) {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(sig);
    },
    stop() {
      stopping ??= (async () => {
        if (proc.exitCode === null && proc.signalCode === null) {
          proc.kill('SIGTERM');
          const killer = setTimeout(() => proc.kill('SIGKILL'), KILL_AFTER_MS);
          await exited;
          clearTimeout(killer);
        }
        fs.rmSync(dir, { recursive: true, force: true });
      })();
      return stopping;
    },
  };
}

/** Run `node src/main.ts ...args` to completion (SIGKILL after 30 s, reported as code null). */
export function runCli(
  args: string[],
  env?: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [mainTs, ...args], {
      cwd: repoRoot,
      env: childEnv(env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    live.add(proc);
    let stdout = '';
    let stderr = '';
    proc.stdout!.setEncoding('utf8');
    proc.stderr!.setEncoding('utf8');
    proc.stdout!.on('data', (c: string) => (stdout += c));
    proc.stderr!.on('data', (c: string) => (stderr += c));
    const killer = setTimeout(() => proc.kill('SIGKILL'), RUN_CLI_TIMEOUT_MS);
    proc.once('error', (err) => {
      clearTimeout(killer);
      live.delete(proc);
      reject(err);
    });
    // 'close' (not 'exit') so every byte of output has been read.
    proc.once('close', (code) => {
      clearTimeout(killer);
      live.delete(proc);
      resolve({ code, stdout, stderr });
    });
  });
}
