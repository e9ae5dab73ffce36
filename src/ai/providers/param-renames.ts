// A provider key's `request.param_renames`: top-level request fields renamed on the way out.
// They run last, so they have the last word over an adapter's built-in renames.

/** Rename top-level members of `body` in place (it is the adapter's own copy) and return it. */
export function applyParamRenames(body: Record<string, unknown>, renames: Readonly<Record<string, string>> | undefined): Record<string, unknown> {
  if (renames === undefined) return body;
  for (const [from, to] of Object.entries(renames)) {
    if (from in body && from !== to) {
      body[to] = body[from];
      delete body[from];
    }
  }
  return body;
}
