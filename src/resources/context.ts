// The state one load carries between pipeline stages: every mapping entry of every
// collection with its identity and derived id, name/id lookups per collection, the issues
// reported so far, and the environment used for interpolation and key_env.

import type { Env } from './interpolate.ts';
import type { FieldPath, IssueList } from './issues.ts';
import { COLLECTIONS, type Collection } from './kinds.ts';

export interface Entry {
  collection: Collection;
  index: number;
  doc: Record<string, unknown>;
  /** Keys the file entry used, so messages can name the spelling the user wrote. */
  written: Set<string>;
  identity?: string;
  id?: string;
  /** Passed schema validation (semantic and cross-reference checks only run on these). */
  valid: boolean;
}

export interface LoadContext {
  env: Env;
  issues: IssueList;
  entries: Record<Collection, Entry[]>;
  /** identity → the first entry with it. */
  byName: Record<Collection, Map<string, Entry>>;
  /** derived id → entry. */
  byId: Record<Collection, Map<string, Entry>>;
  /**
   * Values that must never appear in an error message, with what is printed instead: API key
   * plaintexts read through key_env, and the values `${VAR}` put into the file.
   */
  secrets: Map<string, string>;
}

export function newContext(env: Env, issues: IssueList): LoadContext {
  const make = <T>(f: () => T) => Object.fromEntries(COLLECTIONS.map((c) => [c, f()])) as Record<Collection, T>;
  return { env, issues, entries: make(() => []), byName: make(() => new Map()), byId: make(() => new Map()), secrets: new Map() };
}

/** Report a problem at a path inside an entry. */
export function reportAt(ctx: LoadContext, entry: Entry, path: FieldPath, message: string): void {
  ctx.issues.entry(entry.collection, entry.index, path, message);
}
