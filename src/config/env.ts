// Environment overrides of the bootstrap config: TOLLGATE_<SECTION>__<KEY>=value.
// The name after the prefix is lowercased and split on `__` into a key path, which must
// name a leaf of the schema; the value is coerced by that leaf's schema type. A value
// that cannot be coerced is left as a string so the schema reports it with the key path.

import type { TSchema } from '@sinclair/typebox';

export const ENV_PREFIX = 'TOLLGATE_';
/** The config file path, read by the CLI: not an override. */
export const CONFIG_PATH_VAR = 'TOLLGATE_CONFIG';

export interface EnvOverrides {
  errors: string[];
  /** Dotted key path -> the variable that set it, to name the variable in schema errors. */
  origins: Map<string, string>;
}

type Json = Record<string, unknown>;

const isObjectSchema = (s: TSchema): boolean => s.type === 'object' && typeof s.properties === 'object';
const isPlainObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Every leaf key path of the schema with its variable name, e.g. proxy.addr -> TOLLGATE_PROXY__ADDR. */
function leafVariables(schema: TSchema, prefix: string[] = []): Map<string, string> {
  const out = new Map<string, string>();
  for (const [key, child] of Object.entries(schema.properties as Record<string, TSchema>)) {
    const path = [...prefix, key];
    if (isObjectSchema(child)) {
      for (const [p, v] of leafVariables(child, path)) out.set(p, v);
    } else {
      out.set(path.join('.'), ENV_PREFIX + path.map((s) => s.toUpperCase()).join('__'));
    }
  }
  return out;
}

/** Suggest the right variable when the name only got the `_` vs `__` separators wrong. */
function suggest(name: string, leaves: Map<string, string>): string {
  const squash = (s: string) => s.toUpperCase().replace(/_+/g, '_');
  for (const variable of leaves.values()) {
    if (squash(variable) === squash(name)) return ` (did you mean ${variable}?)`;
  }
  return '';
}

function coerce(raw: string, schema: TSchema): { value: unknown } | { error: string } {
  switch (schema.type) {
    case 'boolean': {
      const v = raw.trim().toLowerCase();
      return { value: v === 'true' ? true : v === 'false' ? false : raw };
    }
    case 'integer': {
      const v = raw.trim();
      return { value: /^[+-]?\d+$/.test(v) ? Number(v) : raw };
    }
    case 'number': {
      const v = raw.trim();
      return { value: v !== '' && Number.isFinite(Number(v)) ? Number(v) : raw };
    }
    case 'array': {
      const v = raw.trim();
      let items: unknown[];
      if (v.startsWith('[')) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(v);
        } catch {
          // The value may hold secrets (admin keys): describe the problem, never echo it.
          return { error: 'not a valid JSON array' };
        }
        if (!Array.isArray(parsed)) return { error: 'not a valid JSON array' };
        items = parsed;
      } else {
        items = v.split(',').map((s) => s.trim()).filter((s) => s !== '');
      }
      const itemSchema = schema.items as TSchema | undefined;
      if (!itemSchema) return { value: items };
      return {
        value: items.map((item) => {
          if (typeof item !== 'string') return item;
          const c = coerce(item, itemSchema);
          return 'value' in c ? c.value : item;
        }),
      };
    }
    default:
      return { value: raw };
  }
}

/**
 * Apply every TOLLGATE_* variable of `env` (except TOLLGATE_CONFIG) onto `data`, creating
 * missing sections. An intermediate that exists but is not a mapping is left alone: the
 * schema then reports it, and boot fails either way.
 */
export function applyEnvOverrides(data: Json, env: Record<string, string | undefined>, schema: TSchema): EnvOverrides {
  const errors: string[] = [];
  const origins = new Map<string, string>();
  const leaves = leafVariables(schema);

  for (const name of Object.keys(env).sort()) {
    const raw = env[name];
    if (!name.startsWith(ENV_PREFIX) || name === CONFIG_PATH_VAR || raw === undefined) continue;
    const segments = name.slice(ENV_PREFIX.length).toLowerCase().split('__');
    const keyPath = segments.join('.');

    let node: TSchema | undefined = schema;
    for (const seg of segments) {
      const props: Record<string, TSchema> | undefined = node && isObjectSchema(node) ? node.properties : undefined;
      node = props && Object.hasOwn(props, seg) ? props[seg] : undefined;
    }
    if (!node) {
      errors.push(`${name}: unknown key "${keyPath}"${suggest(name, leaves)}`);
      continue;
    }
    if (isObjectSchema(node)) {
      errors.push(`${name}: "${keyPath}" is a section, not a key; set its keys as ${name}__<KEY>`);
      continue;
    }

    const coerced = coerce(raw, node);
    if ('error' in coerced) {
      errors.push(`${name}: ${keyPath}: ${coerced.error}`);
      continue;
    }
    let target: unknown = data;
    for (const seg of segments.slice(0, -1)) {
      const t = target as Json;
      if (t[seg] === undefined) t[seg] = {};
      target = t[seg];
      if (!isPlainObject(target)) break;
    }
    if (!isPlainObject(target)) continue;
    target[segments[segments.length - 1]] = coerced.value;
    origins.set(keyPath, name);
  }
  return { errors, origins };
}
