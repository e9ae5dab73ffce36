// Pass-through routes compiled for one snapshot: host and path lookup maps, parsed targets,
// credentials, header policies and caller grants. Compiled lazily on the first request that
// needs them and cached per snapshot (a snapshot is immutable, and a reload brings a new one).
import { compileGlob, type Glob } from '../lib/glob.ts';
import type { UpstreamEndpoint } from '../http/upstream.ts';
import type { ApiKeyEntry, Snapshot } from '../snapshot/snapshot.ts';
import { compileCredential, type ProviderKeyFields, type RouteCredential } from './credentials.ts';
import { wildcardKey } from './host.ts';
import { targetQueryKeys } from './query-conflict.ts';
import { RequestHeaderPolicy, type AuthMode, type CredentialMode } from './request-headers.ts';
import { compileSourceCidrs, type SourceCidrs } from '../lib/source-cidrs.ts';
import { targetUrlEndpoint } from './upstream-endpoint.ts';

type RouteDoc = Snapshot['resources']['passthrough_routes'][number];

export interface UrlTarget {
  readonly endpoint: UpstreamEndpoint;
  /** The target's path without trailing slashes ('' for the root). */
  readonly basePath: string;
  /** Its last segment, which a remainder starting with the same segment does not repeat. */
  readonly lastSegment: string;
  /** The target's own raw query ('' when none). */
  readonly query: string;
  readonly queryKeys: ReadonlySet<string>;
}

export interface CompiledRoute {
  readonly id: string;
  readonly name: string;
  /** Normalized path prefix, or undefined for a host-only route. */
  readonly prefix: string | undefined;
  readonly hasHosts: boolean;
  /** The explicit target, undefined for preserve_host; an Error when target_url cannot be used. */
  readonly target: UrlTarget | Error | undefined;
  readonly authMode: AuthMode;
  readonly authHeader: string | undefined;
  readonly identityHeader: string | undefined;
  readonly sourceCidrs: SourceCidrs | undefined;
  readonly anonymousKeyId: string | undefined;
  readonly credential: RouteCredential;
  readonly headers: RequestHeaderPolicy;
  readonly timeoutMs: number | undefined;
}

export interface HostBucket {
  /** Routes with a path prefix, by prefix. */
  readonly prefixed: Map<string, CompiledRoute>;
  /** The host-only route (no prefix), if any. */
  bare: CompiledRoute | undefined;
}

export interface CompiledRoutes {
  readonly hostExact: ReadonlyMap<string, HostBucket>;
  /** `*.example.com` routes, keyed by `example.com`. */
  readonly hostWildcard: ReadonlyMap<string, HostBucket>;
  /** Path-only routes by prefix. */
  readonly pathOnly: ReadonlyMap<string, CompiledRoute>;
  readonly keysById: ReadonlyMap<string, ApiKeyEntry>;
  /** Each API key's allowed_routes, compiled. */
  readonly grants: ReadonlyMap<string, readonly Glob[]>;
}

function compileTarget(targetUrl: string, credential: RouteCredential): UrlTarget | Error {
  let url: URL;
  try {
    url = new URL(targetUrl);
  } catch {
    return new Error('target_url is not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return new Error('target_url is not an http(s) URL');
  let basePath = url.pathname;
  while (basePath.endsWith('/')) basePath = basePath.slice(0, -1);
  const query = url.search.length > 1 ? url.search.slice(1) : '';
  return {
    endpoint: targetUrlEndpoint(url, credential.mode === 'inject' ? credential.tls : undefined),
    basePath,
    lastSegment: basePath.slice(basePath.lastIndexOf('/') + 1),
    query,
    queryKeys: targetQueryKeys(query),
  };
}

export function compileRoute(doc: RouteDoc, providerKeys: ReadonlyMap<string, ProviderKeyFields>): CompiledRoute {
  const credentialMode: CredentialMode = doc.credential_mode ?? 'inject';
  const authMode: AuthMode = doc.auth_mode ?? 'gateway_key';
  const credential = compileCredential(
    credentialMode,
    doc.provider_key_id,
    doc.provider_key_id === undefined ? undefined : providerKeys.get(doc.provider_key_id),
  );
  const authHeader = authMode === 'header_key' ? doc.auth_header_name?.toLowerCase() : undefined;
  const identityHeader = doc.identity_header?.toLowerCase();
  const prefix = doc.path_prefix === undefined ? undefined : normalizePrefix(doc.path_prefix);
  return {
    id: doc.id,
    name: doc.name,
    prefix,
    hasHosts: doc.hosts !== undefined && doc.hosts.length > 0,
    target: doc.preserve_host === true ? undefined : doc.target_url === undefined ? new Error('the route has no target') : compileTarget(doc.target_url, credential),
    authMode,
    authHeader,
    identityHeader,
    sourceCidrs: doc.source_cidrs !== undefined && doc.source_cidrs.length > 0 ? compileSourceCidrs(doc.source_cidrs) : undefined,
    anonymousKeyId: authMode === 'anonymous' ? doc.anonymous_key_id : undefined,
    credential,
    headers: new RequestHeaderPolicy({
      authMode,
      authHeader,
      identityHeader,
      credentialMode,
      providerStripHeaders: credential.mode === 'inject' ? credential.stripHeaders : [],
      forwardClientHeaders: doc.forward_client_headers ?? [],
      inject: credential.mode === 'inject' ? credential.headers : [],
    }),
    timeoutMs: doc.timeout_ms,
  };
}

/** `/x/` and `/x` claim the same paths; `/` claims every path. */
function normalizePrefix(prefix: string): string {
  let p = prefix;
  while (p.length > 1 && p.endsWith('/')) p = p.slice(0, -1);
  return p === '' ? '/' : p;
}

/** Equal claims resolve to the smallest id, so every replica picks the same route. */
function claim(map: Map<string, CompiledRoute>, key: string, route: CompiledRoute): void {
  const held = map.get(key);
  if (held === undefined || route.id < held.id) map.set(key, route);
}

function bucket(map: Map<string, HostBucket>, key: string): HostBucket {
  let b = map.get(key);
  if (b === undefined) {
    b = { prefixed: new Map(), bare: undefined };
    map.set(key, b);
  }
  return b;
}

export function compileRoutes(snapshot: Snapshot): CompiledRoutes {
  const providerKeys = new Map<string, ProviderKeyFields>();
  for (const pk of snapshot.resources.provider_keys) providerKeys.set(pk.id, pk);
  const hostExact = new Map<string, HostBucket>();
  const hostWildcard = new Map<string, HostBucket>();
  const pathOnly = new Map<string, CompiledRoute>();
  for (const doc of snapshot.resources.passthrough_routes) {
    if (doc.enabled === false) continue;
    const route = compileRoute(doc, providerKeys);
    if (!route.hasHosts) {
      if (route.prefix !== undefined) claim(pathOnly, route.prefix, route);
      continue;
    }
    for (const raw of doc.hosts ?? []) {
      const host = raw.toLowerCase();
      const b = host.startsWith('*.') ? bucket(hostWildcard, wildcardKey(host)) : bucket(hostExact, host);
      if (route.prefix !== undefined) claim(b.prefixed, route.prefix, route);
      else if (b.bare === undefined || route.id < b.bare.id) b.bare = route;
    }
  }
  const keysById = new Map<string, ApiKeyEntry>();
  const grants = new Map<string, readonly Glob[]>();
  for (const key of snapshot.apiKeysByHash.values()) {
    keysById.set(key.id, key);
    grants.set(key.id, (key.doc.allowed_routes ?? []).map(compileGlob));
  }
  return { hostExact, hostWildcard, pathOnly, keysById, grants };
}

const compiled = new WeakMap<Snapshot, CompiledRoutes>();

/** The compiled routes of a snapshot, compiled on first use. */
export function routesFor(snapshot: Snapshot): CompiledRoutes {
  let routes = compiled.get(snapshot);
  if (routes === undefined) {
    routes = compileRoutes(snapshot);
    compiled.set(snapshot, routes);
  }
  return routes;
}
