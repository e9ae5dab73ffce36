// How a rejected bootstrap config is reported by `start` and `validate`. Its own module: the
// serving process imports it, and loads nothing of the config loader (src/config/) to do so.

/** One line per error under a heading. */
export function formatConfigErrors(errors: readonly string[]): string {
  return `tollgate: invalid configuration:\n${errors.map((e) => `  - ${e}`).join('\n')}`;
}
