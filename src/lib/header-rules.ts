// Header rules shared by every path that relays caller headers upstream (pass-through routes,
// a provider key's forward_client_headers on the AI endpoints): the headers that describe one
// connection and never cross the gateway, the caller's Connection-declared hop-by-hop headers, and
// the check that keeps the caller's own gateway credential from being relayed under any name,
// and the compiled form of a `forward_client_headers` list with its per-name decisions.
import { compileGlob, globMatches, type Glob } from './glob.ts';

/** Hop-by-hop and framing headers: never relayed, whatever a configuration says. */
export const ALWAYS_STRIPPED: ReadonlySet<string> = new Set([
  'host', 'content-length', 'connection', 'keep-alive', 'proxy-connection', 'te', 'trailer',
  'transfer-encoding', 'upgrade', 'http2-settings', 'proxy-authenticate',
]);

/** The gateway's own header namespace: a caller's copy never goes upstream. */
export const GATEWAY_NAMESPACE = 'x-tollgate-';

/** Header name prefixes never sent upstream from configuration or a caller: the gateway's own, and an SDK's self-description. */
export const NEVER_FORWARDED_PREFIXES: readonly string[] = [GATEWAY_NAMESPACE, 'x-stainless-'];

/**
 * Request headers whose value is a secret: never captured into usage events, never a request id
 * source (config validation refuses them there, in any letter case).
 */
export const SECRET_REQUEST_HEADERS: readonly string[] = [
  'authorization', 'proxy-authorization', 'x-api-key', 'api-key', 'x-goog-api-key', 'cookie', 'x-amz-security-token',
];

/** Credential headers: never set from configuration, never relayed from the caller. */
export const CREDENTIAL_HEADERS: ReadonlySet<string> = new Set([...SECRET_REQUEST_HEADERS, 'set-cookie', 'x-amz-date', 'x-amz-content-sha256']);

/** W3C trace context headers. */
export const TRACE_HEADERS = ['traceparent', 'tracestate'] as const;

/** Header names the caller's Connection header declares hop-by-hop. */
export function connectionTokens(rawHeaders: readonly string[]): Set<string> | undefined {
  let out: Set<string> | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i].length !== 10 || rawHeaders[i].toLowerCase() !== 'connection') continue;
    for (const token of rawHeaders[i + 1].split(',')) {
      const t = token.trim().toLowerCase();
      if (t !== '') (out ??= new Set()).add(t);
    }
  }
  return out;
}

/** True when a header value is `key`, bare or after an auth scheme (`Bearer <key>`, `Basic <key>`). */
export function carriesKey(value: string, key: string): boolean {
  const v = value.trim();
  if (!v.endsWith(key)) return false;
  const at = v.length - key.length;
  return at === 0 || v[at - 1] === ' ' || v[at - 1] === '\t';
}

/** A `forward_client_headers` list: exact names and single-`*` globs, lowercase. */
export class HeaderNameList {
  readonly exact: ReadonlySet<string>;
  readonly globs: readonly Glob[];

  constructor(entries: readonly string[]) {
    const exact = new Set<string>();
    const globs: Glob[] = [];
    for (const entry of entries) {
      const name = entry.toLowerCase();
      if (name.includes('*')) globs.push(compileGlob(name));
      else exact.add(name);
    }
    this.exact = exact;
    this.globs = globs;
  }

  get empty(): boolean {
    return this.exact.size === 0 && this.globs.length === 0;
  }

  /** A glob of the list matches `name` (exact entries are the caller's to check first). */
  globMatches(name: string): boolean {
    for (const g of this.globs) if (globMatches(g, name)) return true;
    return false;
  }
}

const DECISION_CACHE_MAX = 512;

/**
 * Relay decisions per caller header name, memoised: a name is decided once per compiled policy.
 * Bounded, so arbitrary caller header names cannot grow it.
 */
export class HeaderDecisions {
  private readonly decide: (name: string) => boolean;
  private readonly cache = new Map<string, boolean>();

  constructor(decide: (name: string) => boolean) {
    this.decide = decide;
  }

  get(name: string): boolean {
    const cached = this.cache.get(name);
    if (cached !== undefined) return cached;
    const decision = this.decide(name);
    if (this.cache.size < DECISION_CACHE_MAX) this.cache.set(name, decision);
    return decision;
  }
}
