// The text input of OpenAI's Completions (`prompt`) and Embeddings (`input`) endpoints.

const isTokenArray = (v: unknown): v is number[] => Array.isArray(v) && v.length > 0 && v.every((n) => Number.isInteger(n));

/** A string, a non-empty list of strings, a non-empty list of token ids, or a non-empty list of such lists. */
export function isTextInput(v: unknown): boolean {
  if (typeof v === 'string') return true;
  if (!Array.isArray(v) || v.length === 0) return false;
  return v.every((s) => typeof s === 'string') || isTokenArray(v) || v.every(isTokenArray);
}

/** Why `v` is no text input for `field`; undefined when it is one. */
export function textInputError(v: unknown, field: string): string | undefined {
  if (isTextInput(v)) return undefined;
  if (!Array.isArray(v) || v.length === 0) return `'${field}' is required and must be a string or a non-empty array`;
  return `'${field}' must be a string, an array of strings, an array of token ids, or an array of token-id arrays`;
}
