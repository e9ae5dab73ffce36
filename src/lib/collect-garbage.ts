// One full garbage collection on demand, for a process not started with `--expose-gc`.
//
// Why the gateway wants one: until V8 has run its first mark-compact, it triggers the next one
// from a start-up default rather than from the live heap. Under load, objects that happen to
// outlive two scavenges (an in-flight request's buffers, mostly) are promoted and die in the old
// generation; with no mark-compact for the first ~20 s of load, they and the malloc'd memory
// behind their Buffers pile up (~1 MB/s under SSE saturation, +15 MiB of peak RSS). One
// collection once boot is done sizes the trigger from the real live heap, so the old generation
// is collected every few seconds from the first request on.
import v8 from 'node:v8';
import vm from 'node:vm';

export function collectGarbage(): void {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (exposed !== undefined) {
    exposed();
    return;
  }
  // The flag exposes `gc` in contexts created after it is set: a throwaway context hands it over.
  v8.setFlagsFromString('--expose-gc');
  try {
    (vm.runInNewContext('gc') as () => void)();
  } finally {
    v8.setFlagsFromString('--no-expose-gc');
  }
}
