// The one timeout of a pass-through exchange (spec 3 §2.1 timeout_ms): it bounds the wait for
// the response head and a non-event-stream body, and for event streams the wait for the first
// chunk and each gap between chunks (never the stream's lifetime). Without a route value the
// deployment's upstream.stream_timeout_ms applies, then upstream.timeout_ms; 0 means none, so
// only both set to 0 remove the bound.

export interface DeploymentTimeouts {
  readonly timeoutMs: number;
  readonly streamTimeoutMs: number;
}

/** The bound in ms; 0 = none. */
export function exchangeTimeoutMs(routeTimeoutMs: number | undefined, deployment: DeploymentTimeouts): number {
  if (routeTimeoutMs !== undefined && routeTimeoutMs > 0) return routeTimeoutMs;
  if (deployment.streamTimeoutMs > 0) return deployment.streamTimeoutMs;
  return deployment.timeoutMs > 0 ? deployment.timeoutMs : 0;
}
