// Whether a file the configuration names can be appended to, checked once before it is used.
import { closeSync, openSync } from 'node:fs';

/** Check that `path` can be opened for appending; the error message names the path. */
export function checkWritable(path: string): string | undefined {
  try {
    closeSync(openSync(path, 'a'));
    return undefined;
  } catch (err) {
    return `cannot open ${JSON.stringify(path)} for appending: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`;
  }
}
