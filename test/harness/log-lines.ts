// Reading the gateway's structured stderr lines (access log, usage events) in e2e tests. The
// logger batches lines and flushes every 250 ms, so waiting polls.
import type { Gateway } from './spawn.ts';

/** Every JSON line of the gateway's stderr whose `type` is `type` (e.g. `access`, `usage`). */
export function logLines(gw: Gateway, type: string): any[] {
  const out: any[] = [];
  for (const line of gw.stderrText().split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const parsed = JSON.parse(line);
      if (parsed.type === type) out.push(parsed);
    } catch {
      // A line cut by the batch boundary is completed on a later read.
    }
  }
  return out;
}

/** Lines of `type` matching `match`, once at least `count` of them have appeared (3 s max). */
export async function waitForLines(gw: Gateway, type: string, match: (line: any) => boolean, count = 1, timeoutMs = 3000): Promise<any[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = logLines(gw, type).filter(match);
    if (found.length >= count || Date.now() > deadline) return found;
    await new Promise((r) => setTimeout(r, 25));
  }
}
