// Keeps one of Node's `process.nextTick` records alive for the life of the process, so the
// hidden classes (V8 maps) of those records survive full garbage collections.
//
// Why: nextTick builds each record as an object literal with computed (symbol) keys. Such a
// literal has no boilerplate to hold its maps; they hang off weak transitions and die in any
// full collection that runs while no record is alive, which is most of them (records live for one
// turn of the event loop). The next record then gets new maps, the literal's inline caches see
// one more shape each time, and after a few collections they give up: every record is built
// through the runtime. Measured: nextTick at ~200 ns a call turns into ~800-1,500 ns after a
// dozen full collections, and the proxy schedules about seven ticks a request (stream
// bookkeeping in node:http), so a gateway whose heap churns (every observability sink on) paid
// ~5,000 instructions a tick under callgrind (bench/README.md). One live record keeps the chain
// of maps reachable, and the caches stay monomorphic.
import { executionAsyncResource } from 'node:async_hooks';

let kept: object | undefined;

/** Resolves once a nextTick record is held (inside a tick callback, the running resource is its record). */
export function keepTickShape(): Promise<void> {
  if (kept !== undefined) return Promise.resolve();
  return new Promise((resolve) => {
    process.nextTick(() => {
      kept = executionAsyncResource();
      resolve();
    });
  });
}
