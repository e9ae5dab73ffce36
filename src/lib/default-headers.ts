// A provider key's `request.default_headers`: which names and values can be sent, and the
// gateway's `${...}` templates in values. One compile serves the resources loader (every
// problem is a load error naming the header) and the request path (the compiled headers).
import { ALWAYS_STRIPPED, CREDENTIAL_HEADERS, NEVER_FORWARDED_PREFIXES } from './header-rules.ts';

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

export interface DefaultHeader {
  /** Lowercase. */
  readonly name: string;
  /** The value, or the template parts when it names variables. */
  readonly value: string | readonly Part[];
}

export interface DefaultHeaderProblem {
  /** The header name as configured. */
  readonly key: string;
  readonly message: string;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9a-z-]+$/;

/** A header value must not carry line breaks or NUL (it would split or truncate the header). */
export function safeHeaderValue(v: string): boolean {
  return !/[\r\n\0]/.test(v);
}

function nameProblem(name: string): string | undefined {
  if (!TOKEN.test(name)) return 'is not a valid header name';
  if (CREDENTIAL_HEADERS.has(name)) return 'is a credential header: the gateway sends the key\'s own credential, never a configured one';
  if (ALWAYS_STRIPPED.has(name)) return 'is a hop-by-hop or framing header, which the gateway sets itself';
  const prefix = NEVER_FORWARDED_PREFIXES.find((p) => name.startsWith(p));
  if (prefix !== undefined) return `is in the ${prefix}* namespace, which is never sent upstream`;
  return undefined;
}

function compileTemplate(value: string): readonly Part[] | string {
  if (!value.includes('${')) return value;
  const parts: Part[] = [];
  let rest = value;
  for (let start = rest.indexOf('${'); start >= 0; start = rest.indexOf('${')) {
    if (start > 0) parts.push(rest.slice(0, start));
    const end = rest.indexOf('}', start + 2);
    if (end < 0) throw new Error('has an unclosed "${"');
    const name = rest.slice(start + 2, end).trim();
    if (!(HEADER_TEMPLATE_VARS as readonly string[]).includes(name)) {
      throw new Error(`names an unknown template variable "\${${name}}" (known: ${HEADER_TEMPLATE_VARS.join(', ')})`);
    }
    parts.push({ v: name as HeaderTemplateVar });
    rest = rest.slice(end + 1);
  }
  if (rest !== '') parts.push(rest);
  return parts;
}

/** The headers that can be sent, and why each other one cannot. */
export function compileDefaultHeaders(map: Readonly<Record<string, string>> | undefined): { headers: DefaultHeader[]; problems: DefaultHeaderProblem[] } {
  const headers: DefaultHeader[] = [];
  const problems: DefaultHeaderProblem[] = [];
  for (const [key, value] of Object.entries(map ?? {})) {
    const name = key.trim().toLowerCase();
    const bad = nameProblem(name) ?? (headers.some((d) => d.name === name) ? `names the same header as another entry (${name})` : undefined);
    if (bad !== undefined) {
      problems.push({ key, message: bad });
      continue;
    }
    let compiled: readonly Part[] | string;
    try {
      compiled = compileTemplate(value);
    } catch (err) {
      problems.push({ key, message: (err as Error).message });
      continue;
    }
    if (!safeHeaderValue(value)) {
      problems.push({ key, message: 'must not contain a line break or NUL' });
      continue;
    }
    headers.push({ name, value: compiled });
  }
  return { headers, problems };
}

/** A default header's value for one request; undefined (no header) when a variable has no value. */
export function renderDefaultHeader(h: DefaultHeader, vars: HeaderVars): string | undefined {
  if (typeof h.value === 'string') return h.value;
  let out = '';
  for (const p of h.value) {
    if (typeof p === 'string') {
      out += p;
      continue;
    }
    const v = vars(p.v);
    // No value for this request: no header, rather than a blank or partial claim.
    if (v === undefined || v === '') return undefined;
    out += v;
  }
  return safeHeaderValue(out) ? out : undefined;
}
