// SIGHUP reloads of the resources file. Reading, parsing and validating a large file takes
// hundreds of milliseconds to seconds, so the loader runs in a child process and the event loop
// keeps serving (open streams included) meanwhile. A child process rather than a worker thread:
// what a worker allocates (its isolate, a second module graph, malloc arenas) stays in the
// gateway's resident memory after it exits, ~40 MiB even for a small file, while all of a
// child's memory goes back to the system when it exits. One load runs at a time: signals that arrive during it are
// coalesced into one more load once it is done, so the last signal always leads to a load that
// started after it, and results are applied in order.
import { fork, type ChildProcess } from 'node:child_process';
import module from 'node:module';
import type { LoadResult } from '../resources/loader.ts';

export interface Reloader {
  /** Ask for a reload (a signal arrived). */
  request(): void;
  /** Resolves once no load is running or pending (tests). */
  idle(): Promise<void>;
}

const CHILD = new URL('./reload-child.ts', import.meta.url);

/**
 * Run the loader on `file` in a child process, against this process's environment as it is now.
 * Never rejects: a child that cannot start, crashes or exits without a result is a failed load.
 */
export function loadInChild(file: string): Promise<LoadResult> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (r: LoadResult): void => {
      if (settled) return;
      settled = true;
      resolve(r);
    };
    // The launcher's compile cache (bin/tollgate.js) spares the child Node's TypeScript stripper.
    const cache = module.getCompileCacheDir?.();
    let child: ChildProcess;
    try {
      child = fork(CHILD, [], {
        execArgv: [],
        env: cache === undefined ? process.env : { ...process.env, NODE_COMPILE_CACHE: cache },
        serialization: 'advanced',
        stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
      });
    } catch (err) {
      done({ ok: false, errors: [`reload: cannot start the loader: ${(err as Error).message}`] });
      return;
    }
    // A load under way must not hold the process open at shutdown.
    child.unref();
    child.channel?.unref();
    child.once('message', (r: LoadResult) => done(r));
    child.once('error', (err) => done({ ok: false, errors: [`reload: the loader failed: ${err.message}`] }));
    // 'close', not 'exit': it comes after the IPC channel has delivered everything the child sent.
    child.once('close', (code, signal) => done({ ok: false, errors: [`reload: the loader exited (${signal ?? `code ${code}`}) without a result`] }));
    child.send({ file, env: { ...process.env } });
  });
}

export function createReloader(file: string, onResult: (r: LoadResult) => void, load: (file: string) => Promise<LoadResult> = loadInChild): Reloader {
  let running: Promise<void> | undefined;
  let pending = false;
  const run = async (): Promise<void> => {
    try {
      do {
        pending = false;
        onResult(await load(file));
      } while (pending);
    } finally {
      running = undefined;
    }
  };
  return {
    request() {
      if (running !== undefined) {
        pending = true;
        return;
      }
      running = run();
    },
    async idle() {
      while (running !== undefined) await running;
    },
  };
}
