// Which caller headers reach the upstream (spec 3 §5), compiled once per route and snapshot.
//
// Three tiers, checked per header name (lowercase):
// - always stripped: host, content-length, hop-by-hop headers (plus any the caller's Connection
//   header names), and the gateway's own x-tollgate-* namespace;
// - stripped by default, relayed only when forward_client_headers names them: transport headers
//   (expect), proxy-authorization,
//   the W3C trace headers, the headers the credential mode consumes (inbound credentials and the
//   provider key's strip_headers on inject routes), auth_header_name and identity_header.
//   Credential and trace headers, auth_header_name and identity_header need an exact entry;
//   any other stripped header also matches a single-`*` glob;
// - everything else is relayed as sent.
// Injected headers (the credential, the messages family's version header) replace the caller's
// and are added last, except where forward_client_headers relays the caller's own header of that
// name (an exact entry for credential headers).
import type { OutgoingHttpHeaders } from 'node:http';
import { REQUEST_ID_HEADER } from '../http/request-id.ts';
import { ALWAYS_STRIPPED, GATEWAY_NAMESPACE, HeaderDecisions, HeaderNameList, TRACE_HEADERS, carriesKey, connectionTokens } from '../lib/header-rules.ts';

/** Transport headers that are not hop-by-hop: stripped by default (the body is re-sent whole). */
export const TRANSPORT_HEADERS = ['expect'] as const;
export const CREDENTIAL_HEADERS = ['authorization', 'proxy-authorization', 'x-api-key', 'cookie', 'set-cookie'] as const;

export type AuthMode = 'gateway_key' | 'header_key' | 'anonymous';
export type CredentialMode = 'inject' | 'forward_client';

export interface HeaderPolicyInput {
  authMode: AuthMode;
  authHeader: string | undefined;
  identityHeader: string | undefined;
  credentialMode: CredentialMode;
  /** The provider key's strip_headers (inject routes). */
  providerStripHeaders: readonly string[];
  /** The route's forward_client_headers (lowercase). */
  forwardClientHeaders: readonly string[];
  /** Credential headers injected upstream (inject routes), lowercase names. */
  inject: ReadonlyArray<readonly [string, string]>;
}

export class RequestHeaderPolicy {
  /** Stripped unless forward_client_headers names them. */
  readonly stripped: ReadonlySet<string>;
  /** Of `stripped`, those only an exact entry can relay. */
  readonly exactOnly: ReadonlySet<string>;
  readonly forward: HeaderNameList;
  readonly inject: ReadonlyArray<readonly [string, string]>;
  private readonly decisions = new HeaderDecisions((name) => this.decide(name));

  constructor(input: HeaderPolicyInput) {
    const stripped = new Set<string>(['proxy-authorization', ...TRACE_HEADERS, ...TRANSPORT_HEADERS]);
    const exactOnly = new Set<string>([...CREDENTIAL_HEADERS, ...TRACE_HEADERS]);
    if (input.credentialMode === 'inject') {
      stripped.add('authorization');
      stripped.add('x-api-key');
      for (const h of input.providerStripHeaders) stripped.add(h.toLowerCase());
    } else if (input.authMode === 'gateway_key') {
      // Either may hold the gateway credential.
      stripped.add('authorization');
      stripped.add('x-api-key');
    }
    // An injected header replaces the caller's unless forward_client_headers relays the caller's.
    for (const [name] of input.inject) stripped.add(name);
    for (const h of [input.authHeader, input.identityHeader]) {
      if (h === undefined) continue;
      stripped.add(h);
      exactOnly.add(h);
    }
    this.stripped = stripped;
    this.exactOnly = exactOnly;
    this.forward = new HeaderNameList(input.forwardClientHeaders);
    this.inject = input.inject;
  }

  /** Whether a caller header (lowercase name) is relayed. */
  relays(name: string): boolean {
    return this.decisions.get(name);
  }

  private decide(name: string): boolean {
    if (ALWAYS_STRIPPED.has(name) || name.startsWith(GATEWAY_NAMESPACE)) return false;
    if (!this.stripped.has(name)) return true;
    if (this.forward.exact.has(name)) return true;
    if (this.exactOnly.has(name)) return false;
    return this.forward.globMatches(name);
  }
}

/**
 * The upstream request headers: the caller's relayed headers (repeated ones kept), the injected
 * credentials, and the gateway request id. A header carrying `gatewayKey`, the key this request
 * authenticated with, is never relayed, whatever forward_client_headers says: a caller may send
 * the key in both Authorization and x-api-key, and a route may relay one of them.
 */
export function upstreamRequestHeaders(
  policy: RequestHeaderPolicy,
  rawHeaders: readonly string[],
  requestId: string,
  gatewayKey?: string,
): OutgoingHttpHeaders {
  const out: Record<string, string | string[]> = {};
  const hopByHop = connectionTokens(rawHeaders);
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i].toLowerCase();
    if (!policy.relays(name) || hopByHop?.has(name) === true) continue;
    const value = rawHeaders[i + 1];
    if (gatewayKey !== undefined && carriesKey(value, gatewayKey)) continue;
    const prev = out[name];
    if (prev === undefined) out[name] = value;
    else if (Array.isArray(prev)) prev.push(value);
    else out[name] = [prev, value];
  }
  for (const [name, value] of policy.inject) {
    if (out[name] === undefined) out[name] = value;
  }
  out[REQUEST_ID_HEADER] = requestId;
  return out;
}
