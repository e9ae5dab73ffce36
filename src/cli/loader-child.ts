// Child-process entry of the loader: the bootstrap config and the resources file are read,
// parsed and validated here, never in the serving process. The YAML parser, the schema
// compiler and its compiled validators, and whatever a load allocates are thereby never
// resident in the gateway: the child sends its result and exits (see loader-process.ts).
import { loadConfig } from '../config/load.ts';
import { loadResourcesFile } from '../resources/loader.ts';
import type { BootLoad, LoaderRequest } from './loader-process.ts';

function boot(configFile: string | undefined, demoResources: string, env: NodeJS.ProcessEnv): BootLoad {
  const loaded = loadConfig({ file: configFile, env });
  if (!loaded.ok) return { ok: false, stage: 'config', errors: loaded.errors };
  const resourcesFile = loaded.config.resources_file ?? demoResources;
  const first = loadResourcesFile(resourcesFile, env);
  if (!first.ok) return { ok: false, stage: 'resources', resourcesFile, errors: first.errors };
  return { ok: true, config: loaded.config, resourcesFile, resources: first.resources, count: first.count };
}

process.once('message', (msg: LoaderRequest) => {
  const result = msg.kind === 'boot' ? boot(msg.configFile, msg.demoResources, msg.env) : loadResourcesFile(msg.file, msg.env);
  process.send!(result, () => process.disconnect());
});
