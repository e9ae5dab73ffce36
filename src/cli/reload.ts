// SIGHUP reloads of the resources file. The loader runs in a child process (loader-process.ts),
// so the event loop keeps serving (open streams included) meanwhile. One load runs at a time:
// signals that arrive during it are coalesced into one more load once it is done, so the last
// signal always leads to a load that started after it, and results are applied in order.
// Once closed (the gateway drains) no load starts any more: its result would have nothing left to
// serve, and its child process would only cost the draining gateway time and memory.
import type { LoadResult } from '../resources/loader.ts';
import { loadInChild } from './loader-process.ts';

export interface Reloader {
  /** Ask for a reload (a signal arrived). */
  request(): void;
  /** Resolves once no load is running or pending (tests). */
  idle(): Promise<void>;
  /** Start no load from now on (a load already running finishes); later requests are ignored. */
  close(): void;
}

export function createReloader(file: string, onResult: (r: LoadResult) => void, load: (file: string) => Promise<LoadResult> = loadInChild): Reloader {
  let running: Promise<void> | undefined;
  let pending = false;
  let closed = false;
  const run = async (): Promise<void> => {
    try {
      do {
        pending = false;
        onResult(await load(file));
      } while (pending && !closed);
    } finally {
      running = undefined;
    }
  };
  return {
    request() {
      if (closed) return;
      if (running !== undefined) {
        pending = true;
        return;
      }
      running = run();
    },
    async idle() {
      while (running !== undefined) await running;
    },
    close() {
      closed = true;
      pending = false;
    },
  };
}
