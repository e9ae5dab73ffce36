// `tollgate validate`: the boot/reload loader, run on its own.
import { loadResourcesFile } from '../resources/loader.ts';
import { formatLoadErrors } from '../resources/issues.ts';

export function validateCommand(file: string): number {
  const result = loadResourcesFile(file, process.env);
  if (result.ok) {
    process.stdout.write(`OK: ${file} loaded ${result.count} resource(s)\n`);
    return 0;
  }
  process.stderr.write(formatLoadErrors(file, result.errors) + '\n');
  return 1;
}
