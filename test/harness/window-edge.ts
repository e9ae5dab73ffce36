// Fixed rate-limit windows start on the wall clock (start = now − now % window), so a test that
// counts requests inside one window fails if a window boundary falls between its requests. Tests
// call this first: it returns at once unless the current window ends within `marginMs`, and then
// waits until just past that boundary.

/** Wait, if needed, so that at least `marginMs` remain in the current `windowSecs` window. */
export async function clearOfWindowEdge(marginMs = 5_000, windowSecs = 60): Promise<void> {
  const windowMs = windowSecs * 1000;
  const left = windowMs - (Date.now() % windowMs);
  if (left < marginMs) await new Promise((resolve) => setTimeout(resolve, left + 50));
}
