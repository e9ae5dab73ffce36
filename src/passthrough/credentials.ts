// The upstream credential of a route (spec 3 §5): `inject` sends the route's provider key (the
// messages family as x-api-key plus its version header, every other provider as a Bearer token),
// `forward_client` sends none of its own. An inject route whose key is missing or empty is kept
// as `unavailable` so every request to it fails closed instead of going out unauthenticated.

/** Version header the messages-family API requires with every call. */
export const MESSAGES_VERSION_HEADER = 'anthropic-version';
export const MESSAGES_VERSION = '2023-06-01';
export const DEFAULT_STRIP_HEADERS: readonly string[] = ['authorization', 'cookie', 'set-cookie', 'x-api-key'];

/** The fields of a provider key document this module reads. */
export interface ProviderKeyFields {
  readonly id: string;
  readonly display_name?: string;
  readonly provider?: string;
  readonly adapter?: string | null;
  readonly api_key: string;
  readonly strip_headers?: readonly string[];
  readonly tls?: { readonly ca_cert?: string; readonly verify?: boolean };
}

export interface UpstreamTls {
  readonly caCert: string | undefined;
  readonly verify: boolean;
}

export type RouteCredential =
  | { readonly mode: 'forward_client' }
  | {
      readonly mode: 'inject';
      readonly providerKeyId: string;
      readonly providerKeyName: string | undefined;
      readonly provider: string;
      readonly headers: ReadonlyArray<readonly [string, string]>;
      readonly stripHeaders: readonly string[];
      readonly tls: UpstreamTls | undefined;
    }
  | { readonly mode: 'unavailable'; readonly providerKeyId: string | undefined; readonly reason: string };

export function isMessagesFamily(pk: ProviderKeyFields): boolean {
  return (pk.adapter ?? '').toLowerCase() === 'anthropic' || (pk.provider ?? '').toLowerCase() === 'anthropic';
}

export function compileCredential(
  mode: 'inject' | 'forward_client',
  providerKeyId: string | undefined,
  pk: ProviderKeyFields | undefined,
): RouteCredential {
  if (mode === 'forward_client') return { mode };
  if (providerKeyId === undefined) return { mode: 'unavailable', providerKeyId, reason: 'the route names no provider key' };
  if (pk === undefined) return { mode: 'unavailable', providerKeyId, reason: 'the route\'s provider key does not exist' };
  if (pk.api_key.trim() === '') return { mode: 'unavailable', providerKeyId, reason: 'the route\'s provider key has no credential' };
  const headers: Array<readonly [string, string]> = isMessagesFamily(pk)
    ? [['x-api-key', pk.api_key], [MESSAGES_VERSION_HEADER, MESSAGES_VERSION]]
    : [['authorization', `Bearer ${pk.api_key}`]];
  const tls = pk.tls !== undefined && (pk.tls.ca_cert !== undefined || pk.tls.verify === false)
    ? { caCert: pk.tls.ca_cert, verify: pk.tls.verify !== false }
    : undefined;
  return {
    mode,
    providerKeyId,
    providerKeyName: pk.display_name,
    provider: pk.provider ?? '',
    headers,
    stripHeaders: (pk.strip_headers ?? DEFAULT_STRIP_HEADERS).map((h) => h.toLowerCase()),
    tls,
  };
}
