// Strict schema validation of resource documents: one Ajv instance, every closed branch
// compiled once on first use, and Ajv's errors turned into field-path messages a user can
// act on. Defaults declared in the schemas are filled in (Ajv useDefaults). Messages never
// echo the value being validated (it may be a credential).

import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FieldPath, PathSegment } from './issues.ts';
import { KINDS, type Collection } from './kinds.ts';
import { KEY_HASH_PATTERN } from './api-key.ts';
import { HOST_PATTERN } from './passthrough-route.ts';

// ajv-formats is CommonJS; its default export is the plugin function itself.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

export interface SchemaIssue {
  path: FieldPath;
  message: string;
}

/** Friendlier messages for the patterns the schemas use. */
const PATTERN_MESSAGES: Record<string, string> = {
  [KEY_HASH_PATTERN]: 'must be 64 lowercase hex characters (the SHA-256 of the key)',
  [HOST_PATTERN]: 'must be a host name (a leading "*." wildcard needs at least two more labels, e.g. *.example.com)',
  '^https?://': 'must be an http:// or https:// URL',
  '^/': 'must start with "/"',
  '^[a-z0-9][a-z0-9._-]*$': 'must be lowercase letters, digits, ".", "_" or "-", starting with a letter or digit',
  '^([a-z0-9][a-z0-9._-]*)?$': 'must be lowercase letters, digits, ".", "_" or "-", starting with a letter or digit',
};

function patternMessage(pattern: string): string {
  if (PATTERN_MESSAGES[pattern]) return PATTERN_MESSAGES[pattern];
  if (pattern.startsWith("^[a-z0-9!#$%&'+.^_`|~-]+$")) return 'must be a lowercase header name';
  if (pattern.startsWith('^[A-Za-z0-9!#$%&')) {
    return pattern.includes('\\*') ? 'must be a header name or a glob with one "*"' : 'must be a header name';
  }
  if (pattern.includes('[01][0-9]')) return 'must be a time HH:MM (24-hour)';
  return `must match the pattern ${pattern}`;
}

let ajv: Ajv | undefined;
const compiled = new Map<string, ValidateFunction>();

function validatorFor(collection: Collection, branch: string): ValidateFunction {
  const key = `${collection}/${branch}`;
  let fn = compiled.get(key);
  if (!fn) {
    ajv ??= createAjv();
    fn = ajv.compile(KINDS[collection].branches[branch]);
    compiled.set(key, fn);
  }
  return fn;
}

/**
 * An Ajv configured like the loader's, for compiling resource schemas elsewhere (admin, tests).
 * Pass useDefaults: false to compile the published union schemas (defaults inside anyOf
 * branches cannot be applied, and strict mode rejects them).
 */
export function createAjv(options: { useDefaults?: boolean } = {}): Ajv {
  const instance = new Ajv({ allErrors: true, useDefaults: options.useDefaults ?? true, strict: true, verbose: true });
  addFormats(instance);
  return instance;
}

/** Compile every branch now (at boot), so a schema defect surfaces before the first load. */
export function compileAllValidators(): void {
  for (const spec of Object.values(KINDS)) for (const branch of Object.keys(spec.branches)) validatorFor(spec.collection, branch);
}

function pointerToPath(pointer: string, data: unknown): PathSegment[] {
  if (pointer === '') return [];
  const out: PathSegment[] = [];
  let node: unknown = data;
  for (const raw of pointer.slice(1).split('/')) {
    const seg = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(node)) {
      const i = Number(seg);
      out.push(i);
      node = node[i];
    } else {
      out.push(seg);
      node = node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[seg] : undefined;
    }
  }
  return out;
}

function valueAt(data: unknown, path: FieldPath): unknown {
  let node = data;
  for (const seg of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string | number, unknown>)[seg];
  }
  return node;
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

const TYPE_NAMES: Record<string, string> = {
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'a boolean (true or false)',
  array: 'a list',
  object: 'a mapping',
  null: 'null',
};

function describeSchema(schema: Record<string, unknown>): string {
  if (Array.isArray(schema.enum)) return `one of (${schema.enum.join(', ')})`;
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.type === 'array' && schema.items && typeof schema.items === 'object') {
    const inner = describeSchema(schema.items as Record<string, unknown>);
    return inner.startsWith('a ') ? `a list of ${inner.slice(2)}s` : 'a list';
  }
  return TYPE_NAMES[String(schema.type)] ?? 'a valid value';
}

function typeMatches(schemaType: unknown, actual: string): boolean {
  if (schemaType === actual) return true;
  return schemaType === 'number' && actual === 'integer';
}

function messageFor(e: ErrorObject): string {
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'type':
      return `must be ${String(p.type).split(',').map((t) => TYPE_NAMES[t] ?? t).join(' or ')}`;
    case 'enum':
      return `must be one of: ${(p.allowedValues as unknown[]).join(', ')}`;
    case 'const':
      return `must be ${JSON.stringify(p.allowedValue)}`;
    case 'pattern':
      return patternMessage(String(p.pattern));
    case 'format':
      if (p.format === 'date-time') return 'must be an RFC 3339 date-time with a time zone (e.g. 2026-01-31T00:00:00Z)';
      if (p.format === 'date') return 'must be a date (YYYY-MM-DD)';
      return `must be a valid ${String(p.format)}`;
    case 'minLength':
      return p.limit === 1 ? 'must not be empty' : `must be at least ${String(p.limit)} characters`;
    case 'maxLength':
      return `must be at most ${String(p.limit)} characters`;
    case 'minItems':
      return `must have at least ${String(p.limit)} item${p.limit === 1 ? '' : 's'}`;
    case 'maxItems':
      return `must have at most ${String(p.limit)} items`;
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return `must be ${String(p.comparison)} ${String(p.limit)}`;
    default:
      return e.message ?? 'is invalid';
  }
}

/**
 * Validate `doc` (in place: defaults are inserted) against the named branch of a kind.
 * Returns issues with paths relative to the document.
 */
export function validateDocument(collection: Collection, branch: string, doc: Record<string, unknown>): SchemaIssue[] {
  const validate = validatorFor(collection, branch);
  if (validate(doc)) return [];
  const spec = KINDS[collection];
  let errors = [...(validate.errors ?? [])];

  // Unions inside a document (nullable fields, string-or-list values): when the value's type
  // selects one branch, report that branch's errors; otherwise say which types are allowed.
  for (const e of errors.filter((x) => x.keyword === 'anyOf')) {
    const branches = ((e.parentSchema as Record<string, unknown> | undefined)?.anyOf ?? []) as Record<string, unknown>[];
    const actual = jsonType(valueAt(doc, pointerToPath(e.instancePath, doc)));
    const matching = branches.map((b, i) => (typeMatches(b.type, actual) ? i : -1)).filter((i) => i >= 0);
    const inside = (x: ErrorObject) => x.schemaPath.startsWith(`${e.schemaPath}/`);
    if (matching.length === 1) {
      const keep = `${e.schemaPath}/${matching[0]}/`;
      errors = errors.filter((x) => x !== e && (!inside(x) || x.schemaPath.startsWith(keep)));
    } else {
      e.message = `must be ${branches.map(describeSchema).join(' or ')}`;
      errors = errors.filter((x) => !inside(x));
    }
  }

  const out: SchemaIssue[] = [];
  for (const e of errors) {
    const path = pointerToPath(e.instancePath, doc);
    const p = e.params as Record<string, unknown>;
    if (e.keyword === 'required') {
      out.push({ path: [...path, String(p.missingProperty)], message: 'required' });
    } else if (e.keyword === 'additionalProperties') {
      const field = String(p.additionalProperty);
      out.push({ path: [...path, field], message: spec.unknownField?.(branch, field, path.length) ?? 'unknown field' });
    } else if (e.keyword === 'anyOf') {
      out.push({ path, message: e.message ?? 'is invalid' });
    } else {
      out.push({ path, message: messageFor(e) });
    }
  }
  return out;
}
