// The one resources loader, used by boot, SIGHUP reload and `tollgate validate`:
// YAML → ${VAR} interpolation → identities and derived ids → sugar → strict schema
// validation (defaults filled in) → per-kind semantic checks → cross-references → result.
// Every stage keeps going after an error, so a load reports all problems at once, each as
// `<kind>[<i>] ("<identity>").<field path>: <message>`.

import { readFileSync } from 'node:fs';
import { isUtf8 } from 'node:buffer';
import { IssueList, renderIssues } from './issues.ts';
import { parseYaml } from './yaml.ts';
import { interpolateTree, type Env } from './interpolate.ts';
import { deriveId } from './ids.ts';
import { COLLECTIONS, KINDS, type Collection } from './kinds.ts';
import { newContext, type Entry, type LoadContext } from './context.ts';
import { desugar } from './desugar.ts';
import { validateDocument } from './validator.ts';
import { checkCrossReferences } from './cross-refs.ts';
import type { Resources } from './types.ts';

export type LoadResult = { ok: true; resources: Resources; count: number } | { ok: false; errors: string[] };

export const FORMAT_VERSION = '1';

function isMapping(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function checkFormatVersion(top: Record<string, unknown>, issues: IssueList): void {
  const v = top._format_version;
  if (v === undefined || v === null) {
    issues.file('_format_version', 'required: add _format_version: "1" at the top of the file');
  } else if (typeof v === 'number' && v === 1) {
    issues.file('_format_version', 'must be the string "1", not a number; quote it: _format_version: "1"');
  } else if (v !== FORMAT_VERSION) {
    issues.file('_format_version', `unsupported version ${JSON.stringify(v)}; this gateway reads _format_version: "1"`);
  }
}

/** The identity of an attachment: its `name`, else `<guardrail>/<scope_type>[/<scope>]` as written. */
function attachmentIdentity(doc: Record<string, unknown>): string | undefined {
  const guardrail = doc.guardrail ?? doc.guardrail_id;
  const scopeType = doc.scope_type;
  const scope = doc.scope ?? doc.scope_id;
  if (typeof guardrail !== 'string' || guardrail === '' || typeof scopeType !== 'string') return undefined;
  if (scope === undefined || scope === null) return `${guardrail}/${scopeType}`;
  return typeof scope === 'string' ? `${guardrail}/${scopeType}/${scope}` : undefined;
}

/** Assign identities and derived ids; report missing, malformed and duplicate identities. */
function assignIdentities(ctx: LoadContext): void {
  for (const c of COLLECTIONS) {
    const spec = KINDS[c];
    for (const entry of ctx.entries[c]) {
      const doc = entry.doc;
      let field: string | undefined;
      let identity: unknown;
      if (c === 'guardrail_attachments') {
        field = 'name';
        identity = Object.hasOwn(doc, 'name') ? doc.name : attachmentIdentity(doc);
        if (identity === undefined) continue; // its missing fields are reported by the schema
      } else {
        const given = spec.identity.filter((f) => Object.hasOwn(doc, f));
        // With both spellings the first still names the entry, so other messages can show it.
        if (given.length > 1) ctx.issues.entry(c, entry.index, [given[1]], `give ${spec.identity.join(' or ')}, not both`);
        if (given.length === 0) {
          const alt = spec.identity.length > 1 ? ` (or ${spec.identity.slice(1).join(', ')})` : '';
          ctx.issues.entry(c, entry.index, [spec.identity[0]], `required: the name of this ${spec.label}${alt}`);
          continue;
        }
        field = given[0];
        identity = doc[field];
      }
      if (typeof identity !== 'string' || identity === '') {
        ctx.issues.entry(c, entry.index, [field], 'must be a non-empty string');
        continue;
      }
      entry.identity = identity;
      const first = ctx.byName[c].get(identity);
      if (first) {
        ctx.issues.entry(c, entry.index, [field], `duplicate ${spec.label} ${JSON.stringify(identity)} (also ${c}[${first.index}]); names must be unique`);
        continue;
      }
      entry.id = deriveId(c, identity);
      ctx.byName[c].set(identity, entry);
      ctx.byId[c].set(entry.id, entry);
    }
  }
}

/** Schema-validate each entry against its branch; `valid` = no schema error beyond those already reported. */
function validateEntries(ctx: LoadContext): void {
  for (const c of COLLECTIONS) {
    const spec = KINDS[c];
    for (const entry of ctx.entries[c]) {
      const choice = spec.selectBranch(entry.doc);
      if ('error' in choice) {
        ctx.issues.entry(c, entry.index, choice.error.path, choice.error.message);
        continue;
      }
      const problems = validateDocument(c, choice.branch, entry.doc);
      const uncovered = problems.filter((p) => !ctx.issues.covered(c, entry.index, p.path));
      for (const p of uncovered) ctx.issues.entry(c, entry.index, p.path, p.message);
      entry.valid = uncovered.length === 0;
    }
  }
}

/**
 * Per-kind semantic checks, run on every entry so one load reports as much as it can. A
 * document that failed an earlier stage may not match its type, so a failure inside the
 * check is ignored for it (its real problem is already reported); for a document that
 * passed everything so far it is a bug and propagates.
 */
function checkEntries(ctx: LoadContext, clean: ReadonlySet<Entry>): void {
  for (const c of COLLECTIONS) {
    const spec = KINDS[c];
    for (const entry of ctx.entries[c]) {
      const report = (path: readonly (string | number)[], message: string) => ctx.issues.entry(c, entry.index, path, message);
      try {
        spec.check(entry.doc, report, entry.written);
      } catch (err) {
        if (clean.has(entry)) throw err;
      }
    }
  }
}

function collectEntries(ctx: LoadContext, top: Record<string, unknown>): void {
  for (const c of COLLECTIONS) {
    const list = top[c];
    if (list === undefined || list === null) continue;
    if (!Array.isArray(list)) {
      ctx.issues.file(c, 'must be a list of mappings (or null)');
      continue;
    }
    list.forEach((item, index) => {
      if (!isMapping(item)) {
        ctx.issues.entry(c, index, [], 'must be a mapping');
        return;
      }
      ctx.entries[c].push({ collection: c, index, doc: item, written: new Set(), valid: false });
    });
  }
}

/** Load resources from YAML text. `env` supplies ${VAR} values and key_env keys. */
export function loadResourcesText(text: string, env: Env): LoadResult {
  const parsed = parseYaml(text);
  if (!parsed.ok) return { ok: false, errors: parsed.errors.map((e) => `yaml: ${e}`) };
  const issues = new IssueList();
  const ctx = newContext(env, issues);
  const top = parsed.value;
  if (!isMapping(top)) {
    const got = top === null ? 'an empty document' : Array.isArray(top) ? 'a list' : `a ${typeof top}`;
    return { ok: false, errors: [`top level: must be a mapping with _format_version: "1" and the collections, got ${got}`] };
  }

  checkFormatVersion(top, issues);
  for (const key of Object.keys(top)) {
    if (key !== '_format_version' && !(COLLECTIONS as readonly string[]).includes(key)) {
      issues.file(key, `unknown top-level key; expected _format_version or one of: ${COLLECTIONS.join(', ')}`);
    }
  }
  collectEntries(ctx, top);
  for (const { path, message } of parsed.issues) {
    const [head, index, ...rest] = path;
    if (typeof head === 'string' && typeof index === 'number' && (COLLECTIONS as readonly string[]).includes(head)) {
      issues.entry(head, index, rest, message);
    } else {
      issues.file(typeof head === 'string' ? head : 'top level', message, path.slice(1));
    }
  }

  issues.nextStage();
  for (const c of COLLECTIONS) {
    for (const entry of ctx.entries[c]) {
      interpolateTree(entry.doc, env, [], (path, message) => issues.entry(c, entry.index, path, message), (name, value) => {
        if (value.length >= MIN_MASKED_LENGTH && !ctx.secrets.has(value)) ctx.secrets.set(value, `\${${name}}`);
      });
    }
  }

  issues.nextStage();
  for (const c of COLLECTIONS) {
    for (const entry of ctx.entries[c]) {
      if (Object.hasOwn(entry.doc, 'id')) {
        const how = KINDS[c].identity.length ? KINDS[c].identity.join(' / ') : 'name or guardrail/scope_type/scope';
        issues.entry(c, entry.index, ['id'], `not allowed in a resources file: ids are derived from the ${how}`);
        delete entry.doc.id;
      }
      entry.written = new Set(Object.keys(entry.doc));
    }
  }
  assignIdentities(ctx);

  issues.nextStage();
  desugar(ctx);

  issues.nextStage();
  validateEntries(ctx);
  const clean = new Set<Entry>();
  for (const c of COLLECTIONS) for (const e of ctx.entries[c]) if (e.valid && !issues.entryFailed(c, e.index)) clean.add(e);

  issues.nextStage();
  checkEntries(ctx, clean);

  issues.nextStage();
  checkCrossReferences(ctx);

  if (issues.size > 0) {
    const identityOf = (c: string, i: number) =>
      ctx.entries[c as Collection]?.find((e) => e.index === i)?.identity;
    const errors = renderIssues(issues.issues, ['_format_version', ...COLLECTIONS], identityOf);
    return { ok: false, errors: errors.map((e) => redact(e, ctx.secrets)) };
  }
  return { ok: true, ...buildResources(ctx) };
}

/**
 * Messages never print field values, but an identity or reference name is printed, and the
 * file may have built one from a variable (an unknown reference may even be a credential's
 * `${VAR}` written in the wrong field). Key plaintexts are masked, and every value a variable
 * put into the file is printed as its `${NAME}`. A message prints a name as is or quoted with
 * JSON.stringify, which escapes a newline, `"`, `\` or a control character: both spellings are
 * masked (JSON escapes character by character, so the escaped value is also a substring of any
 * longer escaped string it is part of).
 */
function redact(message: string, secrets: ReadonlyMap<string, string>): string {
  const forms: Array<[string, string]> = [];
  for (const [value, shown] of secrets) {
    forms.push([value, shown]);
    const escaped = JSON.stringify(value).slice(1, -1);
    if (escaped !== value) forms.push([escaped, shown]);
  }
  let out = message;
  for (const [value, shown] of forms.sort((a, b) => b[0].length - a[0].length)) out = out.replaceAll(value, shown);
  return out;
}

/** Shorter variable values are not masked: they would garble unrelated words of a message. */
const MIN_MASKED_LENGTH = 8;

function buildResources(ctx: LoadContext): { resources: Resources; count: number } {
  const out: Record<string, unknown[]> = {};
  let count = 0;
  for (const c of COLLECTIONS) {
    out[c] = ctx.entries[c].map((entry) => {
      KINDS[c].normalize?.(entry.doc);
      return { id: entry.id, ...entry.doc };
    });
    count += out[c].length;
  }
  return { resources: out as unknown as Resources, count };
}

/**
 * The file's text, which must be UTF-8 (a UTF-8 byte order mark is dropped). Decoding leniently
 * would turn a stray Latin-1 or UTF-16 byte into U+FFFD inside a credential or a name and load it.
 */
function decodeUtf8(bytes: Buffer): string | { line: number } {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    // No byte of a multi-byte sequence is a newline, so the bad sequence lies within one line.
    let line = 1;
    for (let start = 0; start <= bytes.length; line++) {
      const end = bytes.indexOf(0x0a, start);
      const stop = end < 0 ? bytes.length : end;
      if (!isUtf8(bytes.subarray(start, stop))) return { line };
      if (end < 0) break;
      start = end + 1;
    }
    return { line };
  }
}

/** Load a resources file. An unreadable file is a failed load with one error. */
export function loadResourcesFile(path: string, env: Env = process.env): LoadResult {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (err) {
    return { ok: false, errors: [`file: cannot read: ${(err as Error).message}`] };
  }
  const text = decodeUtf8(bytes);
  if (typeof text !== 'string') {
    return { ok: false, errors: [`file: line ${text.line} is not valid UTF-8 (save the file as UTF-8)`] };
  }
  return loadResourcesText(text, env);
}
