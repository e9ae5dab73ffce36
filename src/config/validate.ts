// Validation of a bootstrap config document against ConfigSchema: Ajv (closed objects,
// defaults filled in place) plus the cross-key rules JSON Schema cannot say well, each
// error rendered as `<key path>: <human message>`. Values are shown only for keys that
// never hold secrets (addresses, CIDRs, enums); admin keys are never echoed.

import { Ajv, type ErrorObject } from 'ajv';
import ipaddr from 'ipaddr.js';
import { isRedisUrl, parseAddr } from './address.ts';
import { isIpOrCidr } from '../lib/source-cidrs.ts';
import { ConfigSchema, MAX_URL_REWRITE_PATTERN, type GatewayConfig } from './schema.ts';
import { bucketErrors } from '../lib/buckets.ts';
import { checkWritable } from '../lib/writable.ts';
import { SECRET_REQUEST_HEADERS } from '../lib/header-rules.ts';

/** Headers that carry caller credentials: never accepted as a request id source. */
const CREDENTIAL_HEADERS: ReadonlySet<string> = new Set(SECRET_REQUEST_HEADERS);

const ajv = new Ajv({ allErrors: true, useDefaults: true, verbose: true, strict: true });
ajv.addKeyword({ keyword: 'x-message', schemaType: 'string' });
ajv.addFormat('host-port', {
  type: 'string',
  validate: (s: string) => {
    try {
      parseAddr(s);
      return true;
    } catch {
      return false;
    }
  },
});
ajv.addFormat('ip-or-cidr', { type: 'string', validate: isIpOrCidr });
ajv.addFormat('redis-url', { type: 'string', validate: isRedisUrl });
const validateSchema = ajv.compile(ConfigSchema);

type Json = Record<string, unknown>;
type Schema = Record<string, unknown>;

const show = (v: unknown): string => {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
};

/** Ajv's JSON pointer -> `a.b[0].c`, using the data to tell array indexes from keys. */
function keyPath(data: unknown, pointer: string): string[] {
  const out: string[] = [];
  let node: unknown = data;
  for (const raw of pointer.split('/').slice(1)) {
    const seg = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(node)) out.push(`[${seg}]`);
    else out.push(out.length === 0 ? seg : `.${seg}`);
    node = node === null || typeof node !== 'object' ? undefined : (node as Json)[seg];
  }
  return out;
}

function describeType(schema: Schema): string {
  switch (schema.type) {
    case 'integer':
      return typeof schema.minimum === 'number' ? `must be an integer >= ${schema.minimum}` : 'must be an integer';
    case 'number':
      return 'must be a number';
    case 'boolean':
      return 'must be true or false';
    case 'string':
      return 'must be a string';
    case 'array':
      return 'must be a list';
    case 'object':
      return 'must be a mapping';
    default:
      return `must be of type ${String(schema.type)}`;
  }
}

function message(err: ErrorObject): string {
  const schema = (err.parentSchema ?? {}) as Schema;
  switch (err.keyword) {
    case 'type':
    case 'minimum':
      return describeType(schema);
    case 'maximum':
      return schema.type === 'integer' ? `must be an integer <= ${schema.maximum}` : `must be <= ${schema.maximum}`;
    case 'minLength':
      return 'must not be empty';
    case 'maxLength':
      return `must be at most ${schema.maxLength} characters`;
    case 'enum':
      return `must be one of ${(schema.enum as unknown[]).join(', ')} (got ${show(err.data)})`;
    case 'pattern':
      return typeof schema['x-message'] === 'string' ? schema['x-message'] : `must match ${schema.pattern}`;
    case 'format':
      if (err.params.format === 'host-port') {
        try {
          parseAddr(err.data as string);
        } catch (e) {
          return (e as Error).message;
        }
      }
      if (err.params.format === 'ip-or-cidr') return `invalid IP address or CIDR ${show(err.data)}`;
      // Never echoed: the URL may carry a password.
      if (err.params.format === 'redis-url') {
        return 'must be a redis:// or rediss:// URL: host, optional port, optional /db (0-15); percent-encode "/", "?", "#" and "@" in a password';
      }
      return `invalid ${String(err.params.format)} ${show(err.data)}`;
    default:
      return err.message ?? 'is invalid';
  }
}

/** The variable that set `path` (or a key above it), if one did. */
function envVariable(path: string, origins: Map<string, string>): string | undefined {
  for (const [key, variable] of origins) {
    if (path === key || path.startsWith(`${key}[`) || path.startsWith(`${key}.`)) return variable;
  }
  return undefined;
}

/** The variable that set `path` (or a key above it), as a suffix for the error. */
function fromEnv(path: string, origins: Map<string, string>): string {
  return fromEnvAny([path], origins);
}

/** For a rule across keys: the variables that set any of `paths`, as a suffix for the error. */
function fromEnvAny(paths: readonly string[], origins: Map<string, string>): string {
  const names = [...new Set(paths.map((p) => envVariable(p, origins)).filter((v) => v !== undefined))];
  return names.length === 0 ? '' : ` (from ${names.join(', ')})`;
}

function schemaErrors(data: Json, origins: Map<string, string>): string[] {
  if (validateSchema(data)) return [];
  const out: string[] = [];
  for (const err of validateSchema.errors ?? []) {
    const segs = keyPath(data, err.instancePath);
    if (err.keyword === 'additionalProperties') {
      const key = String(err.params.additionalProperty);
      const path = segs.length === 0 ? key : `${segs.join('')}.${key}`;
      out.push(`${path}: unknown key${fromEnv(path, origins)}`);
      continue;
    }
    if (err.keyword === 'required') {
      const key = String(err.params.missingProperty);
      const path = segs.length === 0 ? key : `${segs.join('')}.${key}`;
      out.push(`${path}: required${fromEnv(path, origins)}`);
      continue;
    }
    const path = segs.join('') || '(top level)';
    out.push(`${path}: ${message(err)}${fromEnv(path, origins)}`);
  }
  return out;
}

/** Rules across keys, checked on whatever part of the document has the right types. */
function crossKeyErrors(data: Json, origins: Map<string, string>): string[] {
  const out: string[] = [];
  const proxy = data.proxy as Json | undefined;
  const accept = (proxy?.request_id as Json | undefined)?.accept_headers;
  if (Array.isArray(accept)) {
    accept.forEach((h, i) => {
      if (typeof h === 'string' && CREDENTIAL_HEADERS.has(h.toLowerCase())) {
        const path = `proxy.request_id.accept_headers[${i}]`;
        out.push(`${path}: "${h.toLowerCase()}" carries credentials and cannot supply a request id${fromEnv(path, origins)}`);
      }
    });
  }
  const rewrites = proxy?.url_rewrites;
  if (Array.isArray(rewrites)) {
    rewrites.forEach((rule, i) => {
      const match = (rule as Json | null)?.match;
      if (typeof match !== 'string' || match.length > MAX_URL_REWRITE_PATTERN) return;
      const problem = regexError(match);
      if (problem !== undefined) {
        const path = `proxy.url_rewrites[${i}].match`;
        out.push(`${path}: invalid regular expression: ${problem}${fromEnv(path, origins)}`);
      }
    });
  }
  const observability = data.observability as Json | undefined;
  const buckets = (observability?.metrics as Json | undefined)?.buckets as Json | undefined;
  for (const [set, list] of Object.entries(buckets ?? {})) {
    // Order only: the schema reports empty lists and values that are not finite positive numbers.
    if (!Array.isArray(list) || list.length === 0 || !list.every((b) => typeof b === 'number' && Number.isFinite(b) && b > 0)) continue;
    const path = `observability.metrics.buckets.${set}`;
    for (const e of bucketErrors(path, list as number[])) out.push(`${e}${fromEnv(path, origins)}`);
  }
  const file = (observability?.usage_event as Json | undefined)?.file;
  if (typeof file === 'string' && file.length > 0) {
    const problem = checkWritable(file);
    if (problem !== undefined) out.push(`observability.usage_event.file: ${problem}${fromEnv('observability.usage_event.file', origins)}`);
  }
  const admin = data.admin as Json | undefined;
  if (admin?.enabled === true && Array.isArray(admin.admin_keys) && admin.admin_keys.length === 0) {
    out.push(`admin.admin_keys: must list at least one key when admin.enabled is true${fromEnvAny(['admin.admin_keys', 'admin.enabled'], origins)}`);
  }
  return out;
}

/** The listeners a config starts, in the order start binds them: [key path, enabled flag path or undefined]. */
const LISTENERS: ReadonlyArray<readonly [string, string | undefined]> = [
  ['proxy.addr', undefined],
  ['observability.metrics.prometheus.addr', 'observability.metrics.prometheus.enabled'],
  ['observability.debug.addr', 'observability.debug.enabled'],
  ['admin.addr', 'admin.enabled'],
];

function at(data: Json, path: string): unknown {
  let v: unknown = data;
  for (const k of path.split('.')) v = v !== null && typeof v === 'object' ? (v as Json)[k] : undefined;
  return v;
}

/**
 * Whether two listen hosts take the same port from each other (Node binds `::` dual-stack, so it
 * covers IPv4 too). A hostname is compared only by name: what it resolves to is known at bind
 * time, so an unsure pair is left to the bind error rather than refused here.
 */
function hostsOverlap(a: string, b: string): boolean {
  // process() reads an IPv4-mapped IPv6 address as the IPv4 address it is.
  const norm = (h: string): string => (ipaddr.isValid(h) ? ipaddr.process(h).toNormalizedString() : h.toLowerCase());
  const [x, y] = [norm(a), norm(b)];
  const ANY6 = ipaddr.parse('::').toNormalizedString();
  if (x === y || x === ANY6 || y === ANY6) return true;
  const v4 = (h: string): boolean => ipaddr.IPv4.isValidFourPartDecimal(h);
  return (x === '0.0.0.0' && v4(y)) || (y === '0.0.0.0' && v4(x));
}

/** Two enabled listeners on one port: the second bind would fail, so the config is refused up front. */
function listenerClashErrors(data: Json, origins: Map<string, string>): string[] {
  const bound: Array<{ path: string; addr: string; host: string; port: number }> = [];
  const out: string[] = [];
  for (const [path, enabled] of LISTENERS) {
    if (enabled !== undefined && at(data, enabled) !== true) continue;
    const addr = at(data, path);
    if (typeof addr !== 'string') continue;
    let parsed: { host: string; port: number };
    try {
      parsed = parseAddr(addr);
    } catch {
      continue; // the schema reports it
    }
    if (parsed.port === 0) continue;
    const other = bound.find((b) => b.port === parsed.port && hostsOverlap(b.host, parsed.host));
    if (other !== undefined) {
      out.push(`${path}: "${addr}" takes the port of ${other.path} "${other.addr}": each listener needs its own${fromEnvAny([path, other.path], origins)}`);
    }
    bound.push({ path, addr, ...parsed });
  }
  return out;
}

/** Why `source` does not compile as a regular expression (compiled as the proxy does, no flags); undefined when it does. */
function regexError(source: string): string | undefined {
  try {
    new RegExp(source);
    return undefined;
  } catch (e) {
    const msg = (e as Error).message;
    // V8 repeats the pattern (`Invalid regular expression: /<source>/: <reason>`); the key path already locates it.
    const prefix = `Invalid regular expression: /${source}/: `;
    return msg.startsWith(prefix) ? msg.slice(prefix.length) : msg;
  }
}

/**
 * Validate `data` in place (defaults are filled in) and return every error. `origins`
 * maps key paths set from the environment to their variable, named in the message.
 */
export function validateConfig(data: Json, origins: Map<string, string>): string[] {
  const schema = schemaErrors(data, origins);
  // Rules over a whole section read its typed values: only once the schema holds for that section.
  const ratelimitTyped = !schema.some((e) => e.startsWith('ratelimit.') || e.startsWith('ratelimit:'));
  const sections = ratelimitTyped ? rateLimitConfigErrors((data as unknown as GatewayConfig).ratelimit, origins) : [];
  return [...schema, ...crossKeyErrors(data, origins), ...listenerClashErrors(data, origins), ...sections];
}

/** Rules across keys of the section; empty when it is usable. */
export function rateLimitConfigErrors(c: GatewayConfig['ratelimit'], origins: Map<string, string> = new Map()): string[] {
  const out: string[] = [];
  const env = (...paths: string[]): string => fromEnvAny(paths.map((p) => `ratelimit.${p}`), origins);
  if (c.lease_renew_interval_ms >= c.concurrency_ttl_secs * 1000) {
    out.push(`ratelimit.lease_renew_interval_ms: must be shorter than ratelimit.concurrency_ttl_secs${env('lease_renew_interval_ms', 'concurrency_ttl_secs')}`);
  }
  if (c.backend === 'redis' && c.redis.mode === 'cluster' && c.redis.nodes.length === 0) {
    out.push(`ratelimit.redis.nodes: must list at least one node in cluster mode${env('redis.nodes', 'redis.mode', 'backend')}`);
  }
  if (c.backend === 'redis' && c.redis.mode === 'sentinel') {
    if (c.redis.sentinels.length === 0) out.push(`ratelimit.redis.sentinels: must list at least one sentinel in sentinel mode${env('redis.sentinels', 'redis.mode', 'backend')}`);
    if (c.redis.master_name === undefined) out.push(`ratelimit.redis.master_name: required in sentinel mode${env('redis.master_name', 'redis.mode', 'backend')}`);
  }
  return out;
}
