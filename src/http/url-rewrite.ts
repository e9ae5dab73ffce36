// Pre-routing URL rewrites (config `proxy.url_rewrites`, spec 3 §1 rule 4): compile the rules
// once at boot into one function the proxy listener applies to every request target before any
// matching (host stage, typed routes, path stage). Pure: no I/O, no state between requests.
//
// Semantics: each rule's regex runs on the raw (still percent-encoded) path only; the first rule
// that matches rewrites it with String.prototype.replace (`$1`, `$<name>`, `$&`, `$$`) and the
// result is final (never run through the rules again). The caller's query string is kept.

export interface UrlRewriteRule {
  readonly name?: string;
  /** Regular expression source, compiled without flags. */
  readonly match: string;
  /** Replacement pattern, as String.prototype.replace takes it. */
  readonly rewrite: string;
}

/** Request target (origin form `/p?q` or absolute form `http://h/p?q`) in, rewritten target out. */
export type UrlRewriter = (target: string) => string;

const identity: UrlRewriter = (target) => target;

const SLASH = 47;
const QUESTION = 63;

export function compileUrlRewrites(rules: readonly UrlRewriteRule[]): UrlRewriter {
  // No rules: the same function and string back, nothing allocated per request.
  if (rules.length === 0) return identity;
  const compiled = rules.map((r) => ({ re: new RegExp(r.match), rewrite: r.rewrite }));
  return (target) => {
    // Where the path starts: 0 in origin form; after the authority in absolute form (a forward
    // proxy request), whose `scheme://authority` is kept as is. Anything else (`*`) is untouched.
    let from = 0;
    if (target.charCodeAt(0) !== SLASH) {
      const scheme = target.indexOf('://');
      if (scheme <= 0) return target;
      from = scheme + 3;
      while (from < target.length && target.charCodeAt(from) !== SLASH && target.charCodeAt(from) !== QUESTION) from++;
    }
    const q = target.indexOf('?', from);
    let path = q < 0 ? target.slice(from) : target.slice(from, q);
    if (path === '') path = '/';
    for (const { re, rewrite } of compiled) {
      // Not global, so test() keeps no lastIndex state across requests.
      if (!re.test(path)) continue;
      let out = path.replace(re, rewrite);
      // A path always starts with `/`: a rewrite that drops it gets it back.
      if (out.charCodeAt(0) !== SLASH) out = `/${out}`;
      // A rewrite may add its own query; the caller's then follows it.
      if (q < 0) return target.slice(0, from) + out;
      if (!out.includes('?')) return target.slice(0, from) + out + target.slice(q);
      return q + 1 === target.length ? target.slice(0, from) + out : `${target.slice(0, from)}${out}&${target.slice(q + 1)}`;
    }
    return target;
  };
}
