// YAML text → plain JSON-like value for the resources loader. Accepts exactly one YAML 1.2
// document (core schema, anchors/aliases and `<<` merge keys allowed). Mapping keys must be
// strings, and values must be representable as JSON (no non-finite numbers, no binary);
// such nodes are reported with their path and dropped. A tag the core schema cannot apply
// (`!ENV FOO`, `!!int abc`) is an error rather than silently ignored. What aliases expand to
// is measured before the document is built (yaml-expansion.ts), so an alias bomb fails fast
// while a file may use one anchor any number of times. Syntax errors are reported without
// the source excerpt the YAML library would print, because that excerpt may hold a secret.

import { parseAllDocuments } from 'yaml';
import { formatPath, type FieldPath } from './issues.ts';
import { measureExpansion } from './yaml-expansion.ts';

export interface YamlIssue {
  path: FieldPath;
  message: string;
}

export type YamlParse =
  | { ok: true; value: unknown; issues: YamlIssue[] }
  | { ok: false; errors: string[] };

/**
 * Values a document may expand to through aliases: at least this many, and never fewer than
 * the file has characters, so only expansion (a large anchor used many times) reaches it.
 */
const MIN_VALUE_LIMIT = 1_000_000;

/**
 * A YAML error without the source text the parser quotes after its description (`Unresolved
 * alias ...: <name>`): an unquoted secret that starts with `*`, `|` or `>` would be echoed.
 */
function firstLine(message: string): string {
  const line = message.split('\n')[0].replace(/:\s*$/, '');
  const at = /^(.*?)( at line \d+, column \d+)$/.exec(line);
  const [description, position] = at === null ? [line, ''] : [at[1], at[2]];
  const cut = description.indexOf(': ');
  return (cut < 0 ? description : description.slice(0, cut)) + position;
}

export function parseYaml(text: string): YamlParse {
  let docs;
  try {
    docs = parseAllDocuments(text, { merge: true, uniqueKeys: true, prettyErrors: true });
  } catch (err) {
    return { ok: false, errors: [firstLine((err as Error).message)] };
  }
  // An empty file parses to an empty stream (no documents), treated like an empty document.
  const list = Array.from(docs);
  const errors: string[] = [];
  for (const doc of list) {
    for (const e of doc.errors) errors.push(firstLine(e.message));
    // The library keeps the plain value of a tag it cannot resolve and only warns: `!ENV FOO`
    // would become the string "FOO", a credential that silently is not the one meant.
    for (const w of doc.warnings) {
      if (w.code === 'TAG_RESOLVE_FAILED') errors.push(`${firstLine(w.message)}: unsupported tag (write plain values; \${VAR} reads the environment)`);
    }
  }
  if (errors.length) return { ok: false, errors };
  if (list.length > 1) {
    return { ok: false, errors: [`the file must hold a single YAML document, found ${list.length}`] };
  }
  if (list.length === 0) return { ok: true, value: null, issues: [] };
  const expansion = measureExpansion(list[0], Math.max(MIN_VALUE_LIMIT, text.length));
  if (!expansion.ok) {
    return {
      ok: false,
      errors: ['cycle' in expansion
        ? `${formatPath(expansion.cycle).replace(/^\./, '') || 'top level'}: an alias refers to a node that contains it (the value would be infinite)`
        : `aliases expand the file to more than ${Math.max(MIN_VALUE_LIMIT, text.length)} values; use fewer or smaller aliased nodes`],
    };
  }
  let raw: unknown;
  try {
    // The library's own alias guard (anchor uses times nested aliases) would refuse a file that
    // shares one anchor among a hundred entries; the measure above bounds the real size instead.
    raw = list[0].toJS({ mapAsMap: true, maxAliasCount: -1 });
  } catch (err) {
    return { ok: false, errors: [firstLine((err as Error).message)] };
  }
  const issues: YamlIssue[] = [];
  const value = toPlain(raw, [], issues);
  return { ok: true, value, issues };
}

function describeKey(key: unknown): string {
  if (key === null) return 'null';
  if (key instanceof Map) return 'a mapping';
  if (Array.isArray(key)) return 'a list';
  return `${typeof key} ${String(key)}`;
}

function toPlain(node: unknown, path: FieldPath, issues: YamlIssue[]): unknown {
  if (node instanceof Map) {
    const obj: Record<string, unknown> = {};
    for (const [k, v] of node) {
      if (typeof k !== 'string') {
        issues.push({ path, message: `mapping keys must be strings; found ${describeKey(k)} (quote it)` });
        continue;
      }
      const value = toPlain(v, [...path, k], issues);
      // Defined as an own property so a `__proto__` key cannot change the prototype;
      // strict validation then rejects it as an unknown field.
      Object.defineProperty(obj, k, { value, enumerable: true, writable: true, configurable: true });
    }
    return obj;
  }
  if (Array.isArray(node)) return node.map((v, i) => toPlain(v, [...path, i], issues));
  if (typeof node === 'number' && !Number.isFinite(node)) {
    issues.push({ path, message: 'non-finite numbers (.inf, .nan) are not allowed' });
    return null;
  }
  if (typeof node === 'bigint') return Number(node);
  if (node === null || typeof node === 'string' || typeof node === 'number' || typeof node === 'boolean') return node;
  if (node === undefined) return null;
  issues.push({ path, message: 'value cannot be represented as JSON' });
  return null;
}
