// The targets of the side-by-side runs (`ab.ts`, `instructions.ts`): parsing a target's command-line
// text (`minimal` or a Tollgate config, another tree, node flags, environment variables) and
// starting every named target against one mock upstream and one null OTLP collector, Tollgate as
// `npm start` starts it.

import { join, resolve } from 'node:path';
import {
  spawnReady,
  tollgateLaunch,
  warmTollgate,
  writeTollgateConfig,
  writeTollgateObsFullConfig,
  writeTollgateObsOffConfig,
  type ObsFullSinks,
  type Spawned,
} from './targets.ts';

const BENCH_DIR = import.meta.dirname;
const REPO_ROOT = resolve(BENCH_DIR, '..');
const CONFIGS = ['tollgate', 'obs-full', 'obs-off'] as const;
type Config = (typeof CONFIGS)[number];

export interface TargetSpec {
  label: string;
  /** null: the minimal proxy. */
  config: Config | null;
  repo: string;
  nodeFlags: string[];
  env: Record<string, string>;
  /** obs-full's sinks (BENCH_OBS_FILE=0 and BENCH_OBS_OTLP=0 leave one out). */
  sinks: ObsFullSinks;
}

/** The rig's own variables: they shape obs-full's config and are not passed to the target. */
const SINK_VARIABLES = { BENCH_OBS_FILE: 'file', BENCH_OBS_OTLP: 'exporter' } as const;

/**
 * `minimal` | `<tollgate|obs-full|obs-off>[@<repo dir>]`, then any node flags (`--x`) and
 * environment variables (`NAME=value`, e.g. a `TOLLGATE_<SECTION>__<KEY>` config override).
 * For obs-full, `BENCH_OBS_FILE=0` leaves out the usage file and `BENCH_OBS_OTLP=0` the exporter.
 */
export function parseTarget(text: string): TargetSpec {
  const [head, ...rest] = text.trim().split(/\s+/);
  const nodeFlags = rest.filter((t) => t.startsWith('-'));
  const env: Record<string, string> = {};
  const sinks: ObsFullSinks = { file: true, exporter: true };
  for (const t of rest.filter((r) => !r.startsWith('-'))) {
    const eq = t.indexOf('=');
    if (eq <= 0) throw new Error(`target "${text}": "${t}" is neither a node flag nor NAME=value`);
    const [name, value] = [t.slice(0, eq), t.slice(eq + 1)];
    if (!Object.hasOwn(SINK_VARIABLES, name)) {
      env[name] = value;
      continue;
    }
    if (!head.startsWith('obs-full') || (value !== '0' && value !== '1')) throw new Error(`target "${text}": ${name} is 0 or 1, for obs-full only`);
    sinks[SINK_VARIABLES[name as keyof typeof SINK_VARIABLES]] = value === '1';
  }
  const at = head.indexOf('@');
  const name = at < 0 ? head : head.slice(0, at);
  const repo = at < 0 ? REPO_ROOT : resolve(head.slice(at + 1));
  if (name === 'minimal') return { label: text, config: null, repo, nodeFlags, env, sinks };
  if (!(CONFIGS as readonly string[]).includes(name)) {
    throw new Error(`target "${text}": expected minimal or one of ${CONFIGS.join(', ')}, optionally @<repo dir> and node flags`);
  }
  return { label: text, config: name as Config, repo, nodeFlags, env, sinks };
}

/** An integer option's value, checked: a bad one is an error naming the option. */
export function intOption(name: string, text: string, min: number, max: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`--${name}: must be an integer in [${min}, ${max}], got ${text}`);
  return n;
}

export interface Rig {
  mock: Spawned;
  collector: Spawned;
  /** The caller key every Tollgate target accepts. */
  key: string;
  /** Starts target `i` (its own config directory under the run's). */
  start(spec: TargetSpec, i: number, how?: StartOptions): Promise<Spawned>;
}

export interface StartOptions {
  /** Extra node flags ahead of the target's own (e.g. `--cpu-prof`). */
  nodeFlags?: string[];
  /** A command the target runs under (e.g. valgrind and its options). */
  wrapper?: string[];
  /** taskset -c value for the target (default `1`). */
  cpus?: string;
  readyTimeoutMs?: number;
}

/**
 * The mock upstream and the null collector on core 0, and the configs of every Tollgate target
 * under `work`. The caller stops `rig.mock`, `rig.collector` and what `start` returned.
 */
export async function startRig(work: string): Promise<Rig> {
  const core0 = (name: string, script: string, listener: string): Promise<Spawned> =>
    spawnReady({ name, args: [join(BENCH_DIR, script)], cpus: '0', listener, readyTimeoutMs: 10_000 });
  const mock = await core0('mock upstream', 'mock-upstream.ts', 'upstream');
  let collector: Spawned;
  try {
    collector = await core0('null collector', 'null-collector.ts', 'collector');
  } catch (err) {
    await mock.stop();
    throw err;
  }
  const files = writeTollgateConfig(work, mock.addr);
  const configPath = (c: Config, sinks: ObsFullSinks, i: number): string => {
    const dir = join(work, `t${i}`);
    if (c === 'obs-full') return writeTollgateObsFullConfig(dir, mock.addr, collector.addr, sinks).configPath;
    if (c === 'obs-off') return writeTollgateObsOffConfig(dir, mock.addr).configPath;
    return files.configPath;
  };
  const warmed = new Map<string, Promise<void>>();
  return {
    mock,
    collector,
    key: files.key,
    async start(s, i, how = {}) {
      let env: NodeJS.ProcessEnv = { ...process.env, ...s.env, BENCH_KEY: files.key };
      let args: string[];
      if (s.config === null) {
        args = [...s.nodeFlags, ...(how.nodeFlags ?? []), join(s.repo, 'bench', 'minimal-proxy.ts'), `http://${mock.addr}`];
      } else {
        // As `npm start` runs it (an older tree without a launcher: src/main.ts); the target's
        // own node flags and variables come after the launch's, so they win.
        const launch = tollgateLaunch(s.repo) ?? { nodeFlags: [], entry: join(s.repo, 'src', 'main.ts'), env: {} };
        env = { ...process.env, ...launch.env, ...s.env, BENCH_KEY: files.key };
        if (!warmed.has(s.repo)) warmed.set(s.repo, warmTollgate(launch, s.repo, files.configPath, env));
        await warmed.get(s.repo);
        args = [...launch.nodeFlags, ...s.nodeFlags, ...(how.nodeFlags ?? []), launch.entry, 'start', '--config', configPath(s.config, s.sinks, i)];
      }
      return spawnReady({
        name: s.label,
        args,
        wrapper: how.wrapper,
        cwd: s.repo,
        env,
        cpus: how.cpus ?? '1',
        listener: 'proxy',
        readyTimeoutMs: how.readyTimeoutMs ?? 30_000,
      });
    },
  };
}
