// Command dispatch and help texts for the `tollgate` CLI.
import { parseArgs } from 'node:util';

const MAIN_HELP = `tollgate — open-source API and AI gateway

Usage:
  tollgate start [--config FILE]        start the gateway (default config, built-in demo resources)
  tollgate validate [--config FILE] [--resources FILE]
                                        check a config and its resources file, or a resources
                                        file, without starting
  tollgate <command> --help             help for a command
  tollgate --version                    print the version

Environment:
  TOLLGATE_CONFIG                       config file path when --config is not given
  TOLLGATE_<SECTION>__<KEY>             override a config key, e.g. TOLLGATE_PROXY__ADDR=0.0.0.0:3000
`;

const START_HELP = `Usage: tollgate start [--config FILE]

Starts the configured listeners (proxy, metrics, admin, debug). With no config file every key takes its
default and the built-in demo resources are served (a "mock" provider, no network needed).

When ready, prints one JSON line on stdout naming every bound address, e.g.
  {"event":"ready","listeners":{"proxy":"127.0.0.1:3000","metrics":"127.0.0.1:9090"},"pid":123}
Logs are JSON lines on stderr.

Signals:
  SIGHUP            reload the resources file (a bad file is rejected whole; the last good one keeps serving)
  SIGTERM, SIGINT   drain: /livez and /readyz answer 503, in-flight requests finish, then exit 0
                    (a second signal exits at once)

Options:
  -c, --config FILE   bootstrap config (YAML); see docs/configuration.md
  -h, --help          this help
`;

const VALIDATE_HELP = `Usage: tollgate validate [--config FILE] [--resources FILE]

Runs the loaders of boot and SIGHUP reload and reports the result without starting anything.
  --config FILE      the bootstrap config as start reads it (the file, TOLLGATE_* overrides,
                     cross-key rules), then the resources file it names
  --resources FILE   a resources file (interpolation, schema, cross-references); given with
                     --config, it is checked in place of the config's resources_file
With neither, the config named by TOLLGATE_CONFIG is checked.

Prints an "OK:" line per file ("OK: FILE loaded N resource(s)" for resources) and exits 0, or
prints every error with its path and exits 1. Environment variables referenced by \${VAR} and
key_env must be set.

Options:
  -c, --config FILE      the bootstrap config to check
  -r, --resources FILE   the resources file to check
  -h, --help             this help
`;

function usageError(message: string, help: string): number {
  process.stderr.write(`tollgate: ${message}\n\n${help}`);
  return 2;
}

type Flags = Record<string, { type: 'string' | 'boolean'; short: string }>;

/** Parse a command's flags; `help` is always accepted. Returns an exit code when parsing ends the command. */
function parseFlags(args: string[], options: Flags, help: string): Record<string, string | boolean | undefined> | number {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({ args, options: { ...options, help: { type: 'boolean', short: 'h' } }, strict: true }));
  } catch (e) {
    return usageError((e as Error).message, help);
  }
  if (values.help === true) {
    process.stdout.write(help);
    return 0;
  }
  return values;
}

export async function runCli(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined) return usageError('a command is required', MAIN_HELP);
  if (command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(MAIN_HELP);
    return 0;
  }
  if (command === '--version' || command === '-v' || command === 'version') {
    const { tollgateVersion } = await import('./version.ts');
    process.stdout.write(`tollgate ${tollgateVersion()}\n`);
    return 0;
  }
  if (command === 'start') {
    const flags = parseFlags(rest, { config: { type: 'string', short: 'c' } }, START_HELP);
    if (typeof flags === 'number') return flags;
    // Commands load their modules on demand so one-shot commands start fast.
    const { startCommand } = await import('./start.ts');
    return startCommand({ configFile: (flags.config as string | undefined) ?? process.env.TOLLGATE_CONFIG });
  }
  if (command === 'validate') {
    const flags = parseFlags(rest, { config: { type: 'string', short: 'c' }, resources: { type: 'string', short: 'r' } }, VALIDATE_HELP);
    if (typeof flags === 'number') return flags;
    const resources = flags.resources as string | undefined;
    const config = (flags.config as string | undefined) ?? (resources === undefined ? process.env.TOLLGATE_CONFIG : undefined);
    if (config === undefined && resources === undefined) return usageError('--config FILE or --resources FILE is required', VALIDATE_HELP);
    const { validateCommand } = await import('./validate.ts');
    return validateCommand({ config, resources });
  }
  return usageError(`unknown command "${command}"`, MAIN_HELP);
}
