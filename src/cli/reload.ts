// SIGHUP reloads of the resources file. The loader runs in a child process (loader-process.ts),
// so the event loop keeps serving (open streams included) meanwhile. One load runs at a time:
// signals that arrive during it are coalesced into one more load once it is done, so the last
// signal always leads to a load that started after it, and results are applied in order.
import type { LoadResult } from '../resources/loader.ts';
import { loadInChild } from './loader-process.ts';

export interface Reloader {
  /** Ask for a reload (a signal arrived). */
  request(): void;
  /** Resolves once no load is running or pending (tests). */
  idle(): Promise<void>;
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
