// A provider key's request header options on the AI endpoints: `request.default_headers` (with
// the gateway's `${...}` templates) and `request.forward_client_headers`, compiled once per
// snapshot. Precedence is gateway > operator default > caller: a name already set on the upstream
// request (the credential, content-type, the request id, ...) is never replaced, and a default
// header wins over a forwarded caller header of the same name.
//
// Never sent, whatever the key says: credential headers (the gateway's own caller credentials and
// every provider's auth headers), hop-by-hop and framing headers, the body and answer shape headers
// the gateway sets itself, the gateway's x-tollgate-* namespace, and the caller SDK's
// x-stainless-* self-description. Trace context headers (traceparent, tracestate) are relayed
// only when named exactly, not through a glob; a caller header carrying the gateway key the caller
// authenticated with is never relayed under any name.
import { ALWAYS_STRIPPED, CREDENTIAL_HEADERS, HeaderDecisions, HeaderNameList, NEVER_FORWARDED_PREFIXES, TRACE_HEADERS, carriesKey, connectionTokens } from '../../lib/header-rules.ts';
import { compileDefaultHeaders, renderDefaultHeader, type DefaultHeader, type HeaderVars } from '../../lib/default-headers.ts';

/** Caller headers describing the caller's body and the answer it reads: the gateway sets its own. */
const GATEWAY_SHAPED = ['accept', 'accept-encoding', 'content-type', 'content-encoding', 'expect'];

export interface KeyHeaders {
  readonly defaults: readonly DefaultHeader[];
  readonly forward: HeaderNameList;
  readonly forwards: boolean;
  /** Relay decisions per caller header name. */
  readonly decisions: HeaderDecisions;
}

export interface HeaderOptionsInput {
  default_headers?: Readonly<Record<string, string>>;
  forward_client_headers?: readonly string[];
}

function neverSent(name: string): boolean {
  return CREDENTIAL_HEADERS.has(name) || ALWAYS_STRIPPED.has(name) || NEVER_FORWARDED_PREFIXES.some((p) => name.startsWith(p));
}

export function compileKeyHeaders(request: HeaderOptionsInput | undefined): KeyHeaders | undefined {
  // The loader refused every default header that cannot be sent; the rest compile here.
  const defaults = compileDefaultHeaders(request?.default_headers).headers;
  const forward = new HeaderNameList(request?.forward_client_headers ?? []);
  const forwards = !forward.empty;
  if (defaults.length === 0 && !forwards) return undefined;
  return { defaults, forward, forwards, decisions: new HeaderDecisions((name) => decide(forward, name)) };
}

function decide(forward: HeaderNameList, name: string): boolean {
  if (neverSent(name) || GATEWAY_SHAPED.includes(name)) return false;
  if (forward.exact.has(name)) return true;
  if ((TRACE_HEADERS as readonly string[]).includes(name)) return false;
  return forward.globMatches(name);
}

/** Whether a caller header (lowercase name) is forwarded under these options. */
export function forwardsHeader(h: KeyHeaders, name: string): boolean {
  return h.decisions.get(name);
}

/**
 * Add a key's default and forwarded headers to `out` (the upstream request's headers, the
 * gateway's own already set), only under names `out` does not have yet. A repeated caller header
 * is forwarded with all its values.
 */
export function addKeyHeaders(
  out: Record<string, string | string[] | number>,
  h: KeyHeaders,
  rawHeaders: readonly string[],
  vars: HeaderVars,
  gatewayKey: string | undefined,
): void {
  for (const d of h.defaults) {
    if (out[d.name] !== undefined) continue;
    const value = renderDefaultHeader(d, vars);
    if (value !== undefined) out[d.name] = value;
  }
  if (!h.forwards) return;
  let added: Set<string> | undefined;
  let hopByHop: Set<string> | undefined | null = null;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i].toLowerCase();
    if (!forwardsHeader(h, name)) continue;
    const prev = out[name];
    if (prev !== undefined && added?.has(name) !== true) continue;
    if (hopByHop === null) hopByHop = connectionTokens(rawHeaders);
    if (hopByHop?.has(name) === true) continue;
    const value = rawHeaders[i + 1];
    if (gatewayKey !== undefined && carriesKey(value, gatewayKey)) continue;
    if (prev === undefined) {
      out[name] = value;
      (added ??= new Set()).add(name);
    } else if (Array.isArray(prev)) prev.push(value);
    else out[name] = [prev as string, value];
  }
}
