// Runs the loader (bootstrap config, resources file) in a short-lived child process
// (loader-child.ts) and returns its result. Loading takes hundreds of milliseconds to seconds
// for a large file, and what it needs (the YAML parser, the schema compiler and its compiled
// validators, a file's intermediate objects) would otherwise stay in the gateway's memory for
// good: V8 and malloc keep what a process once used, and a worker thread's isolate, second
// module graph and arenas stay resident after it exits. A child's memory all goes back to the
// system when it exits, and the serving event loop never waits on a load. A load that does not
// finish in time (a file on a stalled mount, a FIFO with no writer) is killed and fails: a stuck
// reload would hold every later one back, and its process would outlive the gateway.
import { fork, type ChildProcess } from 'node:child_process';
import module from 'node:module';
import type { GatewayConfig } from '../config/schema.ts';
import type { LoadResult } from '../resources/loader.ts';
import type { Resources } from '../resources/types.ts';

export type LoaderRequest =
  | { kind: 'boot'; configFile: string | undefined; demoResources: string; env: NodeJS.ProcessEnv }
  | { kind: 'resources'; file: string; env: NodeJS.ProcessEnv };

/** The boot load: the config, then the resources file it names. */
export type BootLoad =
  | { ok: true; config: GatewayConfig; resourcesFile: string; resources: Resources; count: number }
  | { ok: false; stage: 'config'; errors: string[] }
  | { ok: false; stage: 'resources'; resourcesFile: string; errors: string[] }
  | { ok: false; stage: 'loader'; errors: string[] };

const CHILD = new URL('./loader-child.ts', import.meta.url);

/** Longest a load may run; a file that parses in seconds is a large one. */
export const LOAD_TIMEOUT_MS = 60_000;

/**
 * Send `request` to a new loader child and resolve with its answer, or with `failed(<why>)` when
 * the child cannot start, crashes or exits without one. Never rejects.
 */
function runLoader<T>(request: LoaderRequest, failed: (why: string) => T, holdsProcess: boolean, timeoutMs: number): Promise<T> {
  return new Promise((resolve) => {
    let settled = false;
    let child: ChildProcess | undefined;
    const kill = (): void => {
      child?.kill('SIGKILL');
    };
    const timer = setTimeout(() => {
      kill();
      done(failed(`the loader did not finish within ${timeoutMs} ms`));
    }, timeoutMs);
    if (!holdsProcess) timer.unref();
    const done = (r: T): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      process.off('exit', kill);
      resolve(r);
    };
    // The launcher's compile cache (bin/tollgate.js) spares the child Node's TypeScript stripper.
    const cache = module.getCompileCacheDir?.();
    try {
      child = fork(CHILD, [], {
        execArgv: [],
        env: cache === undefined ? process.env : { ...process.env, NODE_COMPILE_CACHE: cache },
        serialization: 'advanced',
        stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      });
    } catch (err) {
      done(failed(`cannot start the loader: ${(err as Error).message}`));
      return;
    }
    if (!holdsProcess) {
      // A reload under way must not hold the process open at shutdown, nor outlive it.
      child.unref();
      child.channel?.unref();
    }
    process.once('exit', kill);
    child.once('message', (r: T) => done(r));
    child.once('error', (err) => done(failed(`the loader failed: ${err.message}`)));
    // 'close', not 'exit': it comes after the IPC channel has delivered everything the child sent.
    child.once('close', (code, signal) => done(failed(`the loader exited (${signal ?? `code ${code}`}) without a result`)));
    child.send(request);
  });
}

/** Load the resources file against this process's environment as it is now (a SIGHUP reload). */
export function loadInChild(file: string, timeoutMs = LOAD_TIMEOUT_MS): Promise<LoadResult> {
  return runLoader<LoadResult>({ kind: 'resources', file, env: { ...process.env } }, (why) => ({ ok: false, errors: [`reload: ${why}`] }), false, timeoutMs);
}

/** Load the bootstrap config and the resources file it names (`tollgate start`). */
export function bootInChild(configFile: string | undefined, demoResources: string, timeoutMs = LOAD_TIMEOUT_MS): Promise<BootLoad> {
  return runLoader<BootLoad>({ kind: 'boot', configFile, demoResources, env: { ...process.env } }, (why) => ({ ok: false, stage: 'loader', errors: [why] }), true, timeoutMs);
}
