// Load issues: how the resources loader records a problem (collection, entry index,
// field path, message) and renders it as `<kind>[<i>] ("<identity>").<path>: <message>`.
// Every stage of the pipeline reports through an IssueList so all errors come out together,
// and an error already reported at a path silences later stages' errors at or under it
// (a missing env var must not also produce "must match pattern" for the same field).

export type PathSegment = string | number;
export type FieldPath = readonly PathSegment[];

export interface Issue {
  /** Collection name for entry errors; a file-level scope (`_format_version`, `yaml`, ...) otherwise. */
  scope: string;
  /** Entry index within the collection; absent for file-level issues. */
  index?: number;
  path: FieldPath;
  message: string;
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `.a.b[0]["x-y"]` — a field path as it would be written in JavaScript. */
export function formatPath(path: FieldPath): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if (IDENT.test(seg)) out += `.${seg}`;
    else out += `[${JSON.stringify(seg)}]`;
  }
  return out;
}

function pathKey(path: FieldPath): string {
  return path.map((s) => (typeof s === 'number' ? `#${s}` : `.${s}`)).join('');
}

/**
 * Collects issues in report order. The pipeline advances `stage` between steps; an entry
 * issue at a path that an earlier stage already reported (the path itself or a parent) is
 * dropped, so one mistake yields one message.
 */
export class IssueList {
  readonly issues: Issue[] = [];
  private stage = 0;
  private readonly failed = new Map<string, { path: string; stage: number }[]>();

  /** Start the next pipeline stage. */
  nextStage(): void {
    this.stage++;
  }

  /** A file-level problem, e.g. scope `_format_version` or `yaml`. */
  file(scope: string, message: string, path: FieldPath = []): void {
    this.issues.push({ scope, path, message });
  }

  /** A problem with one entry of a collection, at a field path inside that entry. */
  entry(collection: string, index: number, path: FieldPath, message: string): void {
    if (this.covered(collection, index, path)) return;
    this.mark(collection, index, path);
    this.issues.push({ scope: collection, index, path, message });
  }

  /** Mark a path as failed without reporting (its problem was reported under another name). */
  suppress(collection: string, index: number, path: FieldPath): void {
    this.mark(collection, index, path);
  }

  private mark(collection: string, index: number, path: FieldPath): void {
    const key = `${collection}#${index}`;
    const list = this.failed.get(key) ?? [];
    // A whole-entry message is not about a field; it must not silence the entry's fields.
    if (path.length > 0) list.push({ path: pathKey(path), stage: this.stage });
    this.failed.set(key, list);
  }

  /** True when an earlier stage reported a problem at this path or one of its parents. */
  covered(collection: string, index: number, path: FieldPath): boolean {
    const list = this.failed.get(`${collection}#${index}`);
    if (!list) return false;
    const p = pathKey(path);
    return list.some((f) => f.stage < this.stage && (p === f.path || p.startsWith(f.path + '.') || p.startsWith(f.path + '#')));
  }

  /** True when any issue was reported (or suppressed) for the entry. */
  entryFailed(collection: string, index: number): boolean {
    return this.failed.has(`${collection}#${index}`);
  }

  get size(): number {
    return this.issues.length;
  }
}

/**
 * Render issues as strings, file-level issues first, then entries in collection order and
 * index order (each entry's issues keep pipeline order). Duplicates are dropped.
 */
export function renderIssues(
  issues: readonly Issue[],
  collectionOrder: readonly string[],
  identityOf: (collection: string, index: number) => string | undefined,
): string[] {
  const rank = (i: Issue): number => {
    if (i.index === undefined) return -1;
    const c = collectionOrder.indexOf(i.scope);
    return c < 0 ? collectionOrder.length : c;
  };
  const sorted = issues
    .map((issue, order) => ({ issue, order }))
    .sort((a, b) =>
      rank(a.issue) - rank(b.issue) ||
      (a.issue.index ?? -1) - (b.issue.index ?? -1) ||
      a.order - b.order,
    );
  const out: string[] = [];
  const seen = new Set<string>();
  for (const { issue } of sorted) {
    let scope = issue.scope;
    if (issue.index !== undefined) {
      scope += `[${issue.index}]`;
      const identity = identityOf(issue.scope, issue.index);
      if (identity !== undefined) scope += ` (${JSON.stringify(identity)})`;
    }
    const line = `${scope}${formatPath(issue.path)}: ${issue.message}`;
    if (!seen.has(line)) {
      seen.add(line);
      out.push(line);
    }
  }
  return out;
}

/** How a per-entry check reports a problem at a field path inside its entry. */
export type Report = (path: FieldPath, message: string) => void;

/** The report printed by boot, reload and `tollgate validate` for a failed load. */
export function formatLoadErrors(file: string, errors: string[]): string {
  return `resources file ${file}: ${errors.length} error(s):\n${errors.map((e) => `  - ${e}`).join('\n')}`;
}
