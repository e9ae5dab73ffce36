// The upstream request path and query (spec 3 §1 rules 7-8). A target_url route mounts the
// remainder under the target's path: the matched prefix is stripped, and a first remainder
// segment equal to the target's last segment is not repeated (`/v1` + `v1/files` is `/v1/files`).
// A preserve_host route keeps the whole path. The target's own query comes first, the caller's is
// appended unchanged; a caller key that collides with a target key, a dot segment anywhere in
// the path, or a raw `#` anywhere in the target is refused with 400. A `#` is not part of an
// HTTP request target (RFC 9112 §3.2), and an upstream URL parser would cut the joined URL there:
// the operator's query after it would be dropped, and `..#` would end a path in a dot segment.
import type { CompiledRoute, UrlTarget } from './compile-routes.ts';
import { passthroughError, type PassthroughError } from './errors.ts';
import { conflictingQueryKey } from './query-conflict.ts';
import { isUnsafePath } from './unsafe-path.ts';

function mountedPath(target: UrlTarget, route: CompiledRoute, prefixMatched: boolean, path: string): string {
  let rest = prefixMatched && route.prefix !== undefined && route.prefix !== '/' ? path.slice(route.prefix.length) : path;
  let start = 0;
  while (start < rest.length && rest.charCodeAt(start) === 47) start++;
  if (start > 0) rest = rest.slice(start);
  const last = target.lastSegment;
  if (last !== '' && rest.startsWith(last) && (rest.length === last.length || rest.charCodeAt(last.length) === 47)) {
    rest = rest.slice(last.length);
    start = 0;
    while (start < rest.length && rest.charCodeAt(start) === 47) start++;
    if (start > 0) rest = rest.slice(start);
  }
  if (rest === '') return target.basePath === '' ? '/' : target.basePath;
  return `${target.basePath}/${rest}`;
}

/**
 * The upstream path with its query, or the 400 to answer. `target` is undefined for a
 * preserve_host route.
 */
export function upstreamPath(
  route: CompiledRoute,
  target: UrlTarget | undefined,
  prefixMatched: boolean,
  path: string,
  query: string,
): string | PassthroughError {
  if (path.includes('#') || query.includes('#')) return passthroughError('unsafe_path', 'the request target contains a "#" (a fragment is not sent in an HTTP request)');
  if (isUnsafePath(path)) return passthroughError('unsafe_path', 'the request path contains a "." or ".." segment');
  if (target === undefined) return query === '' ? path : `${path}?${query}`;
  const conflict = conflictingQueryKey(target.queryKeys, query);
  if (conflict !== undefined) {
    const shown = conflict.length > 64 ? `${conflict.slice(0, 64)}...` : conflict;
    return passthroughError('query_conflict', `query parameter ${JSON.stringify(shown)} is set by the route's target and cannot be overridden`);
  }
  const mounted = mountedPath(target, route, prefixMatched, path);
  const q = target.query === '' ? query : query === '' ? target.query : `${target.query}&${query}`;
  return q === '' ? mounted : `${mounted}?${q}`;
}
