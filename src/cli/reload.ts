// SIGHUP reloads of the resources file. Reading, parsing and validating a large file takes
// hundreds of milliseconds to seconds, so the loader runs in a worker thread and the event
// loop keeps serving (open streams included) meanwhile. One load runs at a time: signals that
// arrive during it are coalesced into one more load once it is done, so the last signal always
// leads to a load that started after it, and results are applied in order.
import { Worker } from 'node:worker_threads';
import type { LoadResult } from '../resources/loader.ts';

export interface Reloader {
  /** Ask for a reload (a signal arrived). */
  request(): void;
  /** Resolves once no load is running or pending (tests). */
  idle(): Promise<void>;
}

const WORKER = new URL('./reload-worker.ts', import.meta.url);

/** Run the loader on `file` in a worker thread. Never rejects: a worker failure is a failed load. */
export function loadInWorker(file: string): Promise<LoadResult> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (r: LoadResult): void => {
      if (settled) return;
      settled = true;
      resolve(r);
    };
    let worker: Worker;
    try {
      worker = new Worker(WORKER, { workerData: { file }, env: process.env, stdout: false, stderr: false });
    } catch (err) {
      done({ ok: false, errors: [`reload: cannot start the loader: ${(err as Error).message}`] });
      return;
    }
    // A load under way must not hold the process open at shutdown.
    worker.unref();
    worker.once('message', (r: LoadResult) => done(r));
    worker.once('error', (err) => done({ ok: false, errors: [`reload: the loader failed: ${err.message}`] }));
    worker.once('exit', (code) => done({ ok: false, errors: [`reload: the loader exited (code ${code}) without a result`] }));
  });
}

export function createReloader(file: string, onResult: (r: LoadResult) => void, load: (file: string) => Promise<LoadResult> = loadInWorker): Reloader {
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
