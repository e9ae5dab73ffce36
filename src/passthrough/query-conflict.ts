// Query merging (spec 3 §1 rule 8): a target_url may carry its own query (an api-version, a
// tenant); the caller's query is appended to it, and may not set any of those keys again. Keys
// compare after every layer of percent-decoding, case-insensitively, and an encoded `&` or `;`
// counts as a separator, so a caller cannot smuggle a second value past an upstream that decodes
// differently.
import { decodeFully } from './percent-decode.ts';

const SEPARATORS = /[&;]/;

/**
 * The keys of a target's query, decoded and lowercased: split on `&` and `;` as the caller's query
 * is (an upstream that splits on `;` would read a caller's value of such a key too).
 */
export function targetQueryKeys(query: string): Set<string> {
  const keys = new Set<string>();
  for (const param of query.split(SEPARATORS)) {
    const key = keyOf(decodeFully(param, true));
    if (key !== '') keys.add(key);
  }
  return keys;
}

function keyOf(param: string): string {
  const eq = param.indexOf('=');
  return (eq < 0 ? param : param.slice(0, eq)).trim().toLowerCase();
}

/** The first caller key that collides with a target key, or undefined. */
export function conflictingQueryKey(targetKeys: ReadonlySet<string>, callerQuery: string): string | undefined {
  if (targetKeys.size === 0 || callerQuery === '') return undefined;
  let start = 0;
  for (let i = 0; i <= callerQuery.length; i++) {
    const c = i < callerQuery.length ? callerQuery.charCodeAt(i) : 38;
    if (c !== 38 && c !== 59) continue;
    const raw = callerQuery.slice(start, i);
    start = i + 1;
    if (raw === '') continue;
    const decoded = decodeFully(raw, true);
    // Decoding may reveal more separators (and `=`), each a parameter of its own.
    for (const param of decoded.split(SEPARATORS)) {
      const key = keyOf(param);
      if (key !== '' && targetKeys.has(key)) return key;
    }
  }
  return undefined;
}
