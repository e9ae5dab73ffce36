// Whether a file the configuration names can be appended to, checked once before it is used.
import { accessSync, constants, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * Check that `path` could be opened for appending, without creating it (a config that fails for
 * another reason leaves nothing behind); the error message names the path.
 */
export function checkWritable(path: string): string | undefined {
  try {
    const exists = statSync(path, { throwIfNoEntry: false });
    if (exists?.isDirectory()) return `cannot open ${JSON.stringify(path)} for appending: EISDIR`;
    accessSync(exists === undefined ? dirname(resolve(path)) : path, constants.W_OK);
    return undefined;
  } catch (err) {
    return `cannot open ${JSON.stringify(path)} for appending: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`;
  }
}
