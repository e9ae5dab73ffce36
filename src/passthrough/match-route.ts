// Route matching (spec 3 §1 rules 5-6). Host stage: routes with hosts, run before the typed
// routes; both the host and, when the route has one, the path prefix must match. Path stage:
// path-only routes, run after the typed routes. Prefixes match on segment boundaries against
// the raw path; among matches the longest prefix wins, an exact host beats a wildcard at the
// same prefix length, and a host-only route ranks below any host route with a matching prefix.
// Each lookup walks the path's segment boundaries from the longest down: Map hits, no scans.
import type { CompiledRoute, CompiledRoutes, HostBucket } from './compile-routes.ts';
import { wildcardKey } from './host.ts';

export interface RouteMatch {
  readonly route: CompiledRoute;
  /** The normalized inbound host ('' when none was sent). */
  readonly host: string;
  /** The route's prefix matched (it is stripped for target_url routes). */
  readonly prefixMatched: boolean;
}

/** Calls `visit` with each prefix `path` lies under, longest first, until it returns a route. */
function longestPrefix(path: string, visit: (prefix: string) => CompiledRoute | undefined): CompiledRoute | undefined {
  let found = visit(path);
  if (found !== undefined) return found;
  for (let i = path.length - 1; i > 0; i--) {
    if (path.charCodeAt(i) !== 47) continue;
    found = visit(path.slice(0, i));
    if (found !== undefined) return found;
  }
  return path === '/' ? undefined : visit('/');
}

export function matchHostStage(routes: CompiledRoutes, host: string, path: string): RouteMatch | undefined {
  if (host === '') return undefined;
  const exact = routes.hostExact.get(host);
  const wild = routes.hostWildcard.get(wildcardKey(host));
  if (exact === undefined && wild === undefined) return undefined;
  const byPrefix = (b: HostBucket | undefined, prefix: string) => (b === undefined || b.prefixed.size === 0 ? undefined : b.prefixed.get(prefix));
  const prefixed = longestPrefix(path, (p) => byPrefix(exact, p) ?? byPrefix(wild, p));
  if (prefixed !== undefined) return { route: prefixed, host, prefixMatched: true };
  const bare = exact?.bare ?? wild?.bare;
  return bare === undefined ? undefined : { route: bare, host, prefixMatched: false };
}

export function matchPathStage(routes: CompiledRoutes, host: string, path: string): RouteMatch | undefined {
  if (routes.pathOnly.size === 0) return undefined;
  const route = longestPrefix(path, (p) => routes.pathOnly.get(p));
  return route === undefined ? undefined : { route, host, prefixMatched: true };
}
