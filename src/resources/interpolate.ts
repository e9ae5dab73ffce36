// `${VAR}` interpolation of the string scalars of a resources file. Only string values are
// rewritten, never mapping keys or non-string scalars, so an environment value can fill in a
// field but cannot add structure. Error messages name the variable, never its value or the
// surrounding text (the text may be a credential).
//
// Grammar: `${NAME}` (NAME = [A-Za-z_][A-Za-z0-9_]*) is replaced by the variable's value and
// may sit anywhere in a string; `$$` is a literal `$`; a `$` followed by anything else is kept
// as written (so `$VAR` is untouched). A missing or empty variable, an unterminated `${`, an
// empty `${}` and an invalid name are errors.

import type { FieldPath } from './issues.ts';

export type Env = Record<string, string | undefined>;

const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface InterpolationResult {
  value: string;
  errors: string[];
}

/** A variable's value was put into the file (for masking it in error messages). */
export type OnValue = (name: string, value: string) => void;

/** Interpolate one string. The returned value is meaningful only when `errors` is empty. */
export function interpolateString(input: string, env: Env, onValue?: OnValue): InterpolationResult {
  if (!input.includes('$')) return { value: input, errors: [] };
  const errors: string[] = [];
  let out = '';
  let i = 0;
  while (i < input.length) {
    const c = input[i];
    if (c !== '$') {
      out += c;
      i++;
      continue;
    }
    const next = input[i + 1];
    if (next === '$') {
      out += '$';
      i += 2;
      continue;
    }
    if (next !== '{') {
      out += '$';
      i++;
      continue;
    }
    const close = input.indexOf('}', i + 2);
    if (close < 0) {
      errors.push(`unterminated "\${" at character ${i + 1}`);
      break;
    }
    const name = input.slice(i + 2, close);
    i = close + 1;
    if (name === '') {
      errors.push('empty "${}"');
      continue;
    }
    if (!VAR_NAME.test(name)) {
      // The text between the braces is not echoed: it may be a credential (`${KEY:-sk-...}`).
      errors.push(`invalid environment variable name in the "\${...}" at character ${i - name.length - 2} (names use letters, digits and _; no defaults or other shell syntax; write "$\${" for a literal "\${")`);
      continue;
    }
    const value = env[name];
    if (value === undefined) {
      errors.push(`environment variable ${name} is not set`);
      continue;
    }
    if (value === '') {
      errors.push(`environment variable ${name} is empty`);
      continue;
    }
    onValue?.(name, value);
    out += value;
  }
  return { value: out, errors };
}

/**
 * Interpolate every string value under `node` in place (arrays and plain objects are walked;
 * keys are left alone). `report` receives each error with the path of its string.
 */
export function interpolateTree(
  node: unknown,
  env: Env,
  path: FieldPath,
  report: (path: FieldPath, message: string) => void,
  onValue?: OnValue,
): unknown {
  if (typeof node === 'string') {
    const r = interpolateString(node, env, onValue);
    for (const e of r.errors) report(path, e);
    return r.errors.length ? node : r.value;
  }
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) node[i] = interpolateTree(node[i], env, [...path, i], report, onValue);
    return node;
  }
  if (node !== null && typeof node === 'object') {
    const obj = node as Record<string, unknown>;
    for (const key of Object.keys(obj)) obj[key] = interpolateTree(obj[key], env, [...path, key], report, onValue);
    return obj;
  }
  return node;
}
