// `tollgate validate`: the boot/reload loaders, run on their own. `--config` checks the bootstrap
// config as `start` reads it (file, TOLLGATE_* overrides, cross-key rules) and the resources
// file it names; `--resources` checks one resources file.
import { loadConfig } from '../config/load.ts';
import { formatConfigErrors } from './format-config-errors.ts';
import { loadResourcesFile } from '../resources/loader.ts';
import { formatLoadErrors } from '../resources/issues.ts';

export interface ValidateTargets {
  config?: string;
  resources?: string;
}

function validateResources(file: string): boolean {
  const result = loadResourcesFile(file, process.env);
  if (!result.ok) {
    process.stderr.write(formatLoadErrors(file, result.errors) + '\n');
    return false;
  }
  process.stdout.write(`OK: ${file} loaded ${result.count} resource(s)\n`);
  return true;
}

/** Check the bootstrap config; a valid one's resources file is checked too, unless `--resources` replaces it. */
function validateConfig(file: string, resourcesGiven: boolean): boolean {
  const loaded = loadConfig({ file, env: process.env });
  if (!loaded.ok) {
    process.stderr.write(formatConfigErrors(loaded.errors) + '\n');
    return false;
  }
  const named = loaded.config.resources_file;
  if (named === undefined) {
    process.stdout.write(`OK: ${file} is a valid configuration (no resources_file: start serves the built-in demo resources)\n`);
    return true;
  }
  process.stdout.write(`OK: ${file} is a valid configuration\n`);
  return resourcesGiven || validateResources(named);
}

export function validateCommand(targets: ValidateTargets): number {
  let ok = true;
  if (targets.config !== undefined) ok = validateConfig(targets.config, targets.resources !== undefined);
  if (targets.resources !== undefined) ok = validateResources(targets.resources) && ok;
  return ok ? 0 : 1;
}
