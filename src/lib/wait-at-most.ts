// Waiting for something that may never settle (a stalled store, an unreachable collector) at
// shutdown: the wait ends when it settles or after `ms`, whichever comes first, and the bound's
// timer is cleared so it never keeps the process alive on its own.

/** Resolves once `work` settles (either way) or `ms` have passed. */
export function waitAtMost(work: Promise<unknown>, ms: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    const done = (): void => {
      clearTimeout(timer);
      resolve();
    };
    work.then(done, done);
  });
}
