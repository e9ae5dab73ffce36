// How large a parsed YAML document becomes once its aliases are expanded, measured on the
// syntax tree before anything is built. Each alias stands for a full copy of its anchor
// (the loader's later stages rewrite entries in place, so copies are real), and a `<<`
// merge copies its sources' keys, so a few lines can describe billions of values ("billion
// laughs"). Sizes are computed once per node in document order, so the measure itself is
// linear in the file. An alias that points back into the node holding it (`a: &a [*a]`,
// `a: &a {b: {<<: *a}}`) would make the document infinite; it is reported with its path.

import { isAlias, isMap, isPair, isScalar, isSeq, type Document } from 'yaml';
import type { FieldPath } from './issues.ts';

export type Expansion = { ok: true; values: number } | { ok: false; cycle: FieldPath } | { ok: false; over: true };

/** Count the values `doc` expands to, stopping at the first cycle or once `limit` is passed. */
export function measureExpansion(doc: Document, limit: number): Expansion {
  const anchors = new Map<string, unknown>();
  const sizes = new Map<unknown, number>();
  const open = new Set<unknown>();
  let cycle: FieldPath | undefined;

  const size = (node: unknown, path: FieldPath): number => {
    if (cycle) return 0;
    if (isAlias(node)) {
      const target = anchors.get(node.source);
      if (open.has(target)) {
        cycle = path;
        return 0;
      }
      return sizes.get(target) ?? 1; // an unknown anchor is a syntax error reported by the parser
    }
    const anchor = (node as { anchor?: string } | null)?.anchor;
    if (anchor) anchors.set(anchor, node); // a later anchor of the same name wins from here on
    let n = 1;
    if (isSeq(node)) {
      open.add(node);
      node.items.forEach((item, i) => { n += size(item, [...path, i]); });
      open.delete(node);
    } else if (isMap(node)) {
      open.add(node);
      for (const pair of node.items) {
        if (!isPair(pair)) continue;
        const key = isScalar(pair.key) ? pair.key.value : undefined;
        n += size(pair.key, path) + size(pair.value, typeof key === 'string' ? [...path, key] : path);
      }
      open.delete(node);
    }
    sizes.set(node, n);
    if (n > limit) throw OVER;
    return n;
  };

  try {
    const values = size(doc.contents, []);
    return cycle ? { ok: false, cycle } : { ok: true, values };
  } catch (err) {
    if (err === OVER) return { ok: false, over: true };
    throw err;
  }
}

const OVER = Symbol('over the limit');
