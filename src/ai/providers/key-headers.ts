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
import { ALWAYS_STRIPPED, GATEWAY_NAMESPACE, HeaderDecisions, HeaderNameList, TRACE_HEADERS, carriesKey, connectionTokens } from '../../lib/header-rules.ts';

/** Credential headers: never set from configuration, never relayed from the caller. */
export const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  'authorization', 'proxy-authorization', 'x-api-key', 'api-key', 'x-goog-api-key', 'cookie', 'set-cookie',
  'x-amz-security-token', 'x-amz-date', 'x-amz-content-sha256',
]);

/** Caller headers describing the caller's body and the answer it reads: the gateway sets its own. */
const GATEWAY_SHAPED = ['accept', 'accept-encoding', 'content-type', 'content-encoding', 'expect'];

const NEVER_FORWARDED_PREFIXES = [GATEWAY_NAMESPACE, 'x-stainless-'];

/** The `${...}` names a default header value may use. */
export const HEADER_TEMPLATE_VARS = [
  'request.id',
  'request.api_key.id',
  'request.api_key.name',
  'request.api_key.team_id',
  'request.api_key.user_id',
  'model.id',
  'model.name',
  'provider_key.id',
  'provider_key.name',
] as const;

export type HeaderTemplateVar = (typeof HEADER_TEMPLATE_VARS)[number];

/** Per-request values of the template variables; an absent or empty one drops its header. */
export type HeaderVars = (name: HeaderTemplateVar) => string | undefined;

type Part = string | { readonly v: HeaderTemplateVar };

interface DefaultHeader {
  readonly name: string;
  /** The value, or the template parts when it names variables. */
  readonly value: string | readonly Part[];
}

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

const TOKEN = /^[!#$%&'*+.^_`|~0-9a-z-]+$/;

function neverSent(name: string): boolean {
  return RESERVED_HEADERS.has(name) || ALWAYS_STRIPPED.has(name) || NEVER_FORWARDED_PREFIXES.some((p) => name.startsWith(p));
}

/** Template parts of a value, undefined when it cannot render (an unknown name, an unclosed `${`). */
function compileTemplate(value: string): readonly Part[] | string | undefined {
  if (!value.includes('${')) return value;
  const parts: Part[] = [];
  let rest = value;
  for (let start = rest.indexOf('${'); start >= 0; start = rest.indexOf('${')) {
    if (start > 0) parts.push(rest.slice(0, start));
    const end = rest.indexOf('}', start + 2);
    if (end < 0) return undefined;
    const name = rest.slice(start + 2, end).trim();
    if (!(HEADER_TEMPLATE_VARS as readonly string[]).includes(name)) return undefined;
    parts.push({ v: name as HeaderTemplateVar });
    rest = rest.slice(end + 1);
  }
  if (rest !== '') parts.push(rest);
  return parts;
}

/** A header value must not carry line breaks or NUL (it would split or truncate the header). */
function safeValue(v: string): boolean {
  return !/[\r\n\0]/.test(v);
}

export function compileKeyHeaders(request: HeaderOptionsInput | undefined): KeyHeaders | undefined {
  const defaults: DefaultHeader[] = [];
  for (const [raw, value] of Object.entries(request?.default_headers ?? {})) {
    const name = raw.trim().toLowerCase();
    if (!TOKEN.test(name) || neverSent(name) || defaults.some((d) => d.name === name)) continue;
    const compiled = compileTemplate(value);
    if (compiled === undefined || (typeof compiled === 'string' && !safeValue(compiled))) continue;
    defaults.push({ name, value: compiled });
  }
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

function render(parts: readonly Part[], vars: HeaderVars): string | undefined {
  let out = '';
  for (const p of parts) {
    if (typeof p === 'string') {
      out += p;
      continue;
    }
    const v = vars(p.v);
    // No value for this request: no header, rather than a blank or partial claim.
    if (v === undefined || v === '') return undefined;
    out += v;
  }
  return safeValue(out) ? out : undefined;
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
    const value = typeof d.value === 'string' ? d.value : render(d.value, vars);
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
