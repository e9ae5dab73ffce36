// Caller access control for a matched route (spec 3 §5, §7): the client source allowlist, the
// gateway credential of the route's auth mode, and the route grant in the principal's
// allowed_routes (`*` grants all). Outside source_cidrs or without the grant: 403; a missing or
// invalid credential: 401.
import type { IncomingHttpHeaders } from 'node:http';
import { globMatches } from '../lib/glob.ts';
import { hashKey } from '../auth/api-key.ts';
import type { ApiKeyEntry, Snapshot } from '../snapshot/snapshot.ts';
import type { CompiledRoute, CompiledRoutes } from './compile-routes.ts';
import { passthroughError, type PassthroughError } from './errors.ts';
import { sourceAllowed } from '../lib/source-cidrs.ts';

export type AuthOutcome =
  | {
      readonly ok: true;
      readonly key: ApiKeyEntry;
      readonly anonymous: boolean;
      /**
       * gateway_key: the key the caller authenticated with. No header carrying it (bare or after
       * an auth scheme, in whichever header) is relayed upstream, even when forward_client_headers
       * names that header (which relays the caller's own upstream credential). header_key routes
       * follow their auth_header_name rule.
       */
      readonly gatewayKey: string | undefined;
    }
  | { readonly ok: false; readonly error: PassthroughError; readonly key: ApiKeyEntry | undefined };

function single(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** `Bearer <k>` (scheme case-insensitive) → k; anything else undefined. */
function bearer(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (v.length <= 7 || v.slice(0, 7).toLowerCase() !== 'bearer ') return undefined;
  const token = v.slice(7).trim();
  return token === '' ? undefined : token;
}

/**
 * gateway_key: the keys presented as `Authorization: Bearer <k>` and `x-api-key: <k>`, in that
 * order. Both are tried: a caller may send its own upstream token in Authorization (relayed when
 * the route names it) and the gateway key in x-api-key.
 */
function gatewayKeys(headers: IncomingHttpHeaders): string[] {
  const out: string[] = [];
  const fromBearer = bearer(headers.authorization);
  if (fromBearer !== undefined) out.push(fromBearer);
  const x = single(headers['x-api-key'])?.trim();
  if (x !== undefined && x !== '' && x !== fromBearer) out.push(x);
  return out;
}

/** header_key: the named header's value, a `Bearer ` scheme tolerated. */
function headerKey(headers: IncomingHttpHeaders, name: string): string | undefined {
  const raw = single(headers[name])?.trim();
  if (raw === undefined || raw === '') return undefined;
  return bearer(raw) ?? (raw.toLowerCase() === 'bearer' ? undefined : raw);
}

function usable(key: ApiKeyEntry): PassthroughError | undefined {
  if (key.disabled) return passthroughError('api_key_disabled', 'API key has been disabled');
  if (key.expiresAt !== undefined && key.expiresAt <= Date.now()) return passthroughError('api_key_expired', 'API key has expired');
  return undefined;
}

export function authenticateRoute(
  route: CompiledRoute,
  routes: CompiledRoutes,
  snapshot: Snapshot,
  headers: IncomingHttpHeaders,
  clientIp: string,
): AuthOutcome {
  if (route.sourceCidrs !== undefined && !sourceAllowed(route.sourceCidrs, clientIp)) {
    return { ok: false, key: undefined, error: passthroughError('ip_restricted', 'your client IP is not allowed to access this route') };
  }
  let key: ApiKeyEntry | undefined;
  let gatewayKey: string | undefined;
  if (route.authMode === 'anonymous') {
    key = route.anonymousKeyId === undefined ? undefined : routes.keysById.get(route.anonymousKeyId);
    if (key === undefined) return { ok: false, key, error: passthroughError('invalid_api_key', 'the route\'s anonymous principal does not exist') };
  } else {
    let presented: string[];
    if (route.authMode === 'header_key') {
      const k = headerKey(headers, route.authHeader!);
      presented = k === undefined ? [] : [k];
    } else {
      presented = gatewayKeys(headers);
    }
    if (presented.length === 0) {
      const message = route.authMode === 'header_key'
        ? `missing or malformed ${route.authHeader} header (this route's gateway API key header)`
        : 'Missing API key in request';
      return { ok: false, key, error: passthroughError('missing_api_key', message) };
    }
    for (const p of presented) {
      key = snapshot.apiKeysByHash.get(hashKey(p));
      if (key !== undefined) {
        if (route.authMode === 'gateway_key') gatewayKey = p;
        break;
      }
    }
    if (key === undefined) return { ok: false, key, error: passthroughError('invalid_api_key', 'Invalid API key') };
  }
  const unusable = usable(key);
  if (unusable !== undefined) return { ok: false, key, error: unusable };
  const grants = routes.grants.get(key.id) ?? [];
  if (!grants.some((g) => globMatches(g, route.name))) {
    return { ok: false, key, error: passthroughError('route_access_forbidden', `API key is not allowed to use passthrough route ${JSON.stringify(route.name)}`) };
  }
  return { ok: true, key, anonymous: route.authMode === 'anonymous', gatewayKey };
}
