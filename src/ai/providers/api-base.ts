// Normalising a provider key's `api_base` the way operators paste it: surrounding space,
// trailing slashes, and an endpoint path copied along with the base.

/** Trim `apiBase`, drop trailing slashes and the first of `suffixes` it ends with (longest first). */
export function trimApiBase(apiBase: string, suffixes: readonly string[]): string {
  let base = apiBase.trim();
  while (base.endsWith('/')) base = base.slice(0, -1);
  for (const suffix of suffixes) {
    if (base.endsWith(suffix)) {
      base = base.slice(0, -suffix.length);
      break;
    }
  }
  while (base.endsWith('/')) base = base.slice(0, -1);
  return base;
}
