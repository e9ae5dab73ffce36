// Resources-file sugar, rewritten into the canonical documents (the shape an etcd row has)
// before schema validation: references by name become references by derived id, key_env
// becomes key_hash, and provider_keys' `secret` becomes `api_key`. An explicit id is still
// accepted but must be the derived id of an entry in the file.
//
// key_env is read here and only its SHA-256 is kept; the plaintext never reaches an error
// message, a log or the result.

import { createHash } from 'node:crypto';
import { KINDS, type Collection } from './kinds.ts';
import { reportAt, type Entry, type LoadContext } from './context.ts';
import type { FieldPath } from './issues.ts';

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Lowercase hex SHA-256 of the UTF-8 key: what auth computes from a presented key. */
export function hashApiKey(plaintext: string): string {
  return createHash('sha256').update(plaintext, 'utf8').digest('hex');
}

function label(c: Collection): string {
  return KINDS[c].label;
}

/** Resolve a name or an id of `target` to its derived id; reports and returns undefined when unknown. */
function lookup(ctx: LoadContext, entry: Entry, target: Collection, value: unknown, path: FieldPath, byName: boolean): string | undefined {
  if (typeof value !== 'string' || value === '') {
    reportAt(ctx, entry, path, byName ? `must be the name of a ${label(target)}` : `must be the id of a ${label(target)}`);
    return undefined;
  }
  const named = ctx.byName[target].get(value);
  if (byName && named) return named.id;
  if (ctx.byId[target].has(value)) return value;
  reportAt(ctx, entry, path, byName
    ? `unknown ${label(target)} ${JSON.stringify(value)}`
    : `no ${label(target)} in this file has id ${JSON.stringify(value)} (ids are derived; reference it by name instead)`);
  return undefined;
}

/**
 * `nameField: <name>` → `idField: <derived id>`, or a checked explicit `idField`.
 * Returns false when neither was given.
 */
function resolveRef(ctx: LoadContext, entry: Entry, target: Collection, nameField: string, idField: string): boolean {
  const doc = entry.doc;
  const hasName = Object.hasOwn(doc, nameField);
  const hasId = Object.hasOwn(doc, idField);
  if (hasName && hasId) {
    reportAt(ctx, entry, [nameField], `give ${nameField} or ${idField}, not both`);
    ctx.issues.suppress(entry.collection, entry.index, [idField]);
    return true;
  }
  if (hasName) {
    const id = lookup(ctx, entry, target, doc[nameField], [nameField], true);
    delete doc[nameField];
    if (id === undefined) ctx.issues.suppress(entry.collection, entry.index, [idField]);
    else doc[idField] = id;
    return true;
  }
  if (hasId) {
    if (lookup(ctx, entry, target, doc[idField], [idField], false) === undefined) {
      ctx.issues.suppress(entry.collection, entry.index, [idField]);
    }
    return true;
  }
  return false;
}

function desugarProviderKey(ctx: LoadContext, entry: Entry): void {
  const doc = entry.doc;
  if (!Object.hasOwn(doc, 'secret')) return;
  if (Object.hasOwn(doc, 'api_key')) {
    reportAt(ctx, entry, ['secret'], 'give api_key or secret, not both');
    return;
  }
  doc.api_key = doc.secret;
  delete doc.secret;
}

function desugarModel(ctx: LoadContext, entry: Entry): void {
  if (Object.hasOwn(entry.doc, 'routing')) return; // routing models name no key; schema reports one
  if (!resolveRef(ctx, entry, 'provider_keys', 'provider_key', 'provider_key_id')) {
    reportAt(ctx, entry, ['provider_key'], 'required: the name of a provider key (or provider_key_id)');
    ctx.issues.suppress(entry.collection, entry.index, ['provider_key_id']);
  }
}

function desugarApiKey(ctx: LoadContext, entry: Entry): void {
  const doc = entry.doc;
  const hasEnv = Object.hasOwn(doc, 'key_env');
  const hasHash = Object.hasOwn(doc, 'key_hash');
  if (hasEnv && hasHash) {
    reportAt(ctx, entry, ['key_env'], 'give key_env or key_hash, not both');
    ctx.issues.suppress(entry.collection, entry.index, ['key_hash']);
    delete doc.key_env;
    return;
  }
  if (!hasEnv && !hasHash) {
    reportAt(ctx, entry, ['key_env'], 'required: the environment variable holding the key (or key_hash)');
    ctx.issues.suppress(entry.collection, entry.index, ['key_hash']);
    return;
  }
  if (hasHash) {
    if (typeof doc.key_hash === 'string') doc.key_hash = doc.key_hash.toLowerCase();
    return;
  }
  const name = doc.key_env;
  delete doc.key_env;
  ctx.issues.suppress(entry.collection, entry.index, ['key_hash']);
  if (typeof name !== 'string' || !ENV_NAME.test(name)) {
    reportAt(ctx, entry, ['key_env'], 'must be an environment variable name (letters, digits and _)');
    return;
  }
  const plaintext = ctx.env[name];
  if (plaintext === undefined) {
    reportAt(ctx, entry, ['key_env'], `environment variable ${name} is not set`);
    return;
  }
  if (plaintext === '') {
    reportAt(ctx, entry, ['key_env'], `environment variable ${name} is empty`);
    return;
  }
  // An unexpanded template (say, from an env file without interpolation) is never a real key.
  if (plaintext.includes('${')) {
    reportAt(ctx, entry, ['key_env'], `environment variable ${name} holds an unexpanded "\${...}" template`);
    return;
  }
  ctx.secrets.set(plaintext, '[REDACTED]');
  doc.key_hash = hashApiKey(plaintext);
}

function desugarRoute(ctx: LoadContext, entry: Entry): void {
  resolveRef(ctx, entry, 'provider_keys', 'provider_key', 'provider_key_id');
  resolveRef(ctx, entry, 'api_keys', 'anonymous_key', 'anonymous_key_id');
}

const POLICY_SCOPE_TARGETS: Record<string, Collection> = { api_key: 'api_keys', model: 'models' };
const NAME_OPERATORS = new Set(['==', '~=', 'in']);

/** Condition leaves on the api_key/model dimensions compare ids; names are accepted and rewritten. */
function desugarConditions(ctx: LoadContext, entry: Entry, node: unknown, path: FieldPath, depth: number): void {
  if (depth > 32 || node === null || typeof node !== 'object' || Array.isArray(node)) return;
  const n = node as Record<string, unknown>;
  if (Array.isArray(n.children)) {
    n.children.forEach((child, i) => desugarConditions(ctx, entry, child, [...path, 'children', i], depth + 1));
  }
  const target = typeof n.dimension === 'string' ? POLICY_SCOPE_TARGETS[n.dimension] : undefined;
  if (!target || typeof n.operator !== 'string' || !NAME_OPERATORS.has(n.operator)) return;
  if (typeof n.value === 'string') {
    n.value = lookup(ctx, entry, target, n.value, [...path, 'value'], true) ?? n.value;
  } else if (Array.isArray(n.value)) {
    n.value = n.value.map((v, i) => (typeof v === 'string' ? lookup(ctx, entry, target, v, [...path, 'value', i], true) ?? v : v));
  }
}

function desugarPolicy(ctx: LoadContext, entry: Entry): void {
  const doc = entry.doc;
  const target = typeof doc.scope === 'string' ? POLICY_SCOPE_TARGETS[doc.scope] : undefined;
  if (target && typeof doc.scope_ref === 'string') {
    const id = lookup(ctx, entry, target, doc.scope_ref, ['scope_ref'], true);
    if (id !== undefined) doc.scope_ref = id;
  }
  if (Object.hasOwn(doc, 'conditions')) desugarConditions(ctx, entry, doc.conditions, ['conditions'], 0);
}

const ATTACHMENT_SCOPE_TARGETS: Record<string, Collection> = {
  model: 'models',
  api_key: 'api_keys',
  passthrough_route: 'passthrough_routes',
};

function desugarAttachment(ctx: LoadContext, entry: Entry): void {
  const doc = entry.doc;
  if (!resolveRef(ctx, entry, 'guardrails', 'guardrail', 'guardrail_id')) {
    reportAt(ctx, entry, ['guardrail'], 'required: the name of a guardrail (or guardrail_id)');
    ctx.issues.suppress(entry.collection, entry.index, ['guardrail_id']);
  }
  const scopeType = doc.scope_type;
  if (typeof scopeType !== 'string') return;
  if (scopeType === 'env') {
    if (doc.scope === null) delete doc.scope;
    if (!Object.hasOwn(doc, 'scope_id') && !Object.hasOwn(doc, 'scope')) doc.scope_id = null;
    if (Object.hasOwn(doc, 'scope')) {
      reportAt(ctx, entry, ['scope'], 'not allowed when scope_type is env');
      delete doc.scope;
    }
    return;
  }
  const target = ATTACHMENT_SCOPE_TARGETS[scopeType];
  if (target) {
    resolveRef(ctx, entry, target, 'scope', 'scope_id');
    return;
  }
  // team and mcp_server scopes are not resources of this file: the value is the id itself.
  if (Object.hasOwn(doc, 'scope') && Object.hasOwn(doc, 'scope_id')) {
    reportAt(ctx, entry, ['scope'], 'give scope or scope_id, not both');
  } else if (Object.hasOwn(doc, 'scope')) {
    doc.scope_id = doc.scope;
    delete doc.scope;
  }
}

/** Rewrite every entry's sugar in place. Entries must already carry identities and ids. */
export function desugar(ctx: LoadContext): void {
  for (const entry of ctx.entries.provider_keys) desugarProviderKey(ctx, entry);
  for (const entry of ctx.entries.models) desugarModel(ctx, entry);
  for (const entry of ctx.entries.api_keys) desugarApiKey(ctx, entry);
  for (const entry of ctx.entries.passthrough_routes) desugarRoute(ctx, entry);
  for (const entry of ctx.entries.rate_limit_policies) desugarPolicy(ctx, entry);
  for (const entry of ctx.entries.guardrail_attachments) desugarAttachment(ctx, entry);
}
