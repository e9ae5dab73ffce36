// Benchmark entry point (`npm run bench [-- --quick]`). In one run, against one mock upstream:
// (a) the mock directly, (b) the minimal Node proxy, (c) Tollgate with auth, aliasing, usage
// tap, metrics and access log on; on request (`--obs`, `--only`) also (d) Tollgate with every
// observability feature on, exporting to a null OTLP collector, and (e) Tollgate with
// observability off, for the on-vs-off throughput bar. Each process under test is pinned to
// core 1; wrk, the open-loop generator, the mock and the collector share core 0. Repetitions
// interleave the targets; the report gives medians. Prints a markdown table, writes the raw runs as JSON to bench/results/.
// See bench/README.md for what each number means.

import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { fetchCollectorStats } from './null-collector.ts';
import { runOpenLoopProcess } from './open-loop.ts';
import {
  coreBusyBetween,
  coreMicrosBetween,
  readCoreTimes,
  selfAndReapedCpuMicros,
  treeCpuMicros,
  treePeakRssBytes,
  type CoreTimes,
} from './procstat.ts';
import {
  DEFAULT_TARGET_IDS,
  DISTURBED_FOREIGN_CORES,
  DISTURBED_STEAL_CORES,
  isDisturbed,
  OBS_TARGET_IDS,
  obsVerdicts,
  TARGET_IDS,
  TARGET_LABELS,
  renderMarkdown,
  selectTargets,
  summarizeTarget,
  verdicts,
  type Run,
  type TargetId,
  type TargetSummary,
} from './report.ts';
import {
  smokeCheck,
  spawnReady,
  tollgateLaunch,
  warmTollgate,
  writeTollgateConfig,
  writeTollgateObsFullConfig,
  writeTollgateObsOffConfig,
  type Spawned,
} from './targets.ts';
import { CHAT_PATH, CLIENT_HEADERS, REQUEST_JSON, REQUEST_SSE } from './workload.ts';
import { runWrk } from './wrk.ts';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const REPO_ROOT = resolve(BENCH_DIR, '..');

interface Profile {
  reps: number;
  satWarmupSec: number;
  satSec: number;
  olWarmupSec: number;
  olSec: number;
  /** Whole run is aborted past this (for the three default targets; scaled for more); waits and retries stop at 3/4 of it. */
  limitSec: number;
  /** Longest wait for other load on the machine to stop before one measurement... */
  quietWaitSec: number;
  /** ...and over the whole run. */
  quietBudgetSec: number;
  /** Measurements disturbed by other load that may be taken again, per run. */
  retries: number;
}

const PROFILES: Record<'full' | 'quick', Profile> = {
  full: { reps: 3, satWarmupSec: 2, satSec: 10, olWarmupSec: 2, olSec: 10, limitSec: 15 * 60, quietWaitSec: 10, quietBudgetSec: 60, retries: 4 },
  quick: { reps: 1, satWarmupSec: 1, satSec: 6, olWarmupSec: 1, olSec: 8, limitSec: 6 * 60, quietWaitSec: 5, quietBudgetSec: 20, retries: 2 },
};

const USAGE = `usage: node bench/run.ts [--quick] [--reps N] [--only direct,minimal,tollgate,...] [--obs]
                        [--connections N] [--rate N] [--sse-rate N]
  --quick        one repetition, shorter runs (~2 min); default: 3 interleaved repetitions (~8-10 min)
  --only         targets to run, of ${TARGET_IDS.join(', ')}
                 (default: ${DEFAULT_TARGET_IDS.join(', ')}; direct is always run: it is the latency baseline)
  --obs          also run ${OBS_TARGET_IDS.join(' and ')} (observability all on vs off)
  --connections  wrk connections for saturation (default 64)
  --rate         open-loop rate for the added-latency runs, req/s (default 1000)
  --sse-rate     open-loop rate for the SSE first-byte runs, streams/s (default 500)`;

function parseOptions() {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      reps: { type: 'string' },
      only: { type: 'string' },
      obs: { type: 'boolean', default: false },
      connections: { type: 'string', default: '64' },
      rate: { type: 'string', default: '1000' },
      'sse-rate': { type: 'string', default: '500' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const int = (name: string, v: string, min: number, max: number): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > max) throw new Error(`--${name}: must be an integer in [${min}, ${max}], got ${v}`);
    return n;
  };
  const mode = values.quick ? 'quick' : 'full';
  const profile = { ...PROFILES[mode] };
  if (values.reps !== undefined) profile.reps = int('reps', values.reps, 1, 9);
  const targets = selectTargets(values.only, values.obs);
  // Each target adds the same phases to every repetition: scale the run's time limit with them.
  profile.limitSec = Math.round((profile.limitSec * Math.max(3, targets.length)) / 3);
  return {
    mode,
    profile,
    targets,
    connections: int('connections', values.connections, 1, 1000),
    rate: int('rate', values.rate, 1, 20_000),
    sseRate: int('sse-rate', values['sse-rate'], 1, 20_000),
  };
}

type Options = ReturnType<typeof parseOptions>;

function have(cmd: string, args: string[]): boolean {
  try {
    execFileSync(cmd, args, { stdio: 'ignore' });
    return true;
  } catch (e) {
    // wrk -v exits 1 after printing its version; only a missing binary matters.
    return (e as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}

function toolVersion(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).split('\n')[0].trim();
  } catch (e) {
    const out = (e as { stdout?: string }).stdout ?? '';
    return out.split('\n')[0].trim() || 'unknown';
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Target {
  id: TargetId;
  proc: Spawned;
}

interface WindowStart {
  at: number;
  cores: CoreTimes;
  trees: number[];
  self: number;
}

interface Window {
  seconds: number;
  /** CPU of the first pid's process tree, µs. */
  cpuUs: number;
  coreBusy: number[];
  /** Cores' worth of process CPU that was none of ours: other work on the machine. */
  foreignCores: number;
  /** Cores' worth of hypervisor steal. */
  stealCores: number;
}

/** Starts measuring; pids[0] is the process under test, the rest are our other long-lived processes. */
function openWindow(pids: readonly number[]): WindowStart {
  return { at: performance.now(), cores: readCoreTimes(), trees: pids.map(treeCpuMicros), self: selfAndReapedCpuMicros() };
}

function closeWindow(w: WindowStart, pids: readonly number[]): Window {
  const cores = readCoreTimes();
  const self = selfAndReapedCpuMicros();
  const trees = pids.map(treeCpuMicros);
  const seconds = (performance.now() - w.at) / 1000;
  let ours = self - w.self;
  for (let i = 0; i < trees.length; i++) ours += trees[i] - w.trees[i];
  const foreign = coreMicrosBetween(w.cores, cores, 'process') - ours;
  return {
    seconds,
    cpuUs: trees[0] - w.trees[0],
    coreBusy: coreBusyBetween(w.cores, cores),
    foreignCores: Math.max(0, foreign) / (seconds * 1e6),
    stealCores: coreMicrosBetween(w.cores, cores, 'steal') / (seconds * 1e6),
  };
}

async function main(): Promise<void> {
  const opts: Options = parseOptions();
  const { profile } = opts;
  if (process.platform !== 'linux') throw new Error('the benchmark reads /proc: Linux only');
  if (!have('wrk', ['-v'])) throw new Error('wrk not found: install it with `apt-get install -y wrk` (Debian package)');
  const cpuCount = os.availableParallelism();
  const pin = cpuCount >= 2 && have('taskset', ['-V']);
  const loadCpus = pin ? '0' : null;
  const testCpus = pin ? '1' : null;
  const warnings: string[] = [];
  if (!pin) warnings.push(`not pinned (${cpuCount} CPU(s) or no taskset): numbers are not comparable with pinned runs`);
  // The orchestrator mostly sleeps, but keep it off the measured core too.
  if (pin) execFileSync('taskset', ['-a', '-p', '-c', loadCpus!, String(process.pid)], { stdio: 'ignore' });

  const quiet = await backgroundLoad();
  if (quiet) warnings.push(`before the run: ${quiet}`);

  const work = mkdtempSync(join(os.tmpdir(), 'tollgate-bench-'));
  const procs: Spawned[] = [];
  const stopAll = async (): Promise<void> => {
    await Promise.all(procs.splice(0).map((p) => p.stop()));
  };
  const limit = setTimeout(() => {
    process.stderr.write(`bench: aborted, run exceeded ${profile.limitSec} s\n`);
    void stopAll().finally(() => process.exit(1));
  }, profile.limitSec * 1000);
  limit.unref();
  const onSignal = (): void =>
    void stopAll().finally(() => {
      rmSync(work, { recursive: true, force: true });
      process.exit(130);
    });
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  const started = Date.now();
  const log = (msg: string): void => {
    process.stderr.write(`[bench ${((Date.now() - started) / 1000).toFixed(0).padStart(4)}s] ${msg}\n`);
  };

  try {
    const mock = await spawnReady({
      name: 'mock upstream',
      args: [join(BENCH_DIR, 'mock-upstream.ts')],
      cpus: loadCpus,
      listener: 'upstream',
      readyTimeoutMs: 10_000,
    });
    procs.push(mock);
    const targets: Target[] = [{ id: 'direct', proc: mock }];
    const missing: Partial<Record<TargetId, string>> = {};

    if (opts.targets.includes('minimal')) {
      const p = await spawnReady({
        name: 'minimal proxy',
        args: [join(BENCH_DIR, 'minimal-proxy.ts'), `http://${mock.addr}`],
        cpus: testCpus,
        listener: 'proxy',
        readyTimeoutMs: 10_000,
      });
      procs.push(p);
      targets.push({ id: 'minimal', proc: p });
    }

    // Every Tollgate target reads the same caller key from BENCH_KEY.
    const tollgateFiles = writeTollgateConfig(work, mock.addr);
    // Tollgate runs as `npm start` runs it; one start before the measured ones fills the compile cache.
    const launch = tollgateLaunch(REPO_ROOT);
    const tollgateEnv = { ...process.env, BENCH_KEY: tollgateFiles.key };
    let warmed = false;
    const startTollgate = async (id: TargetId, configPath: () => string): Promise<void> => {
      if (!opts.targets.includes(id)) return;
      if (launch === null) {
        missing[id] = 'gateway not runnable yet (no `node [flags] <entry> start` script in package.json)';
        return;
      }
      try {
        if (!warmed) {
          await warmTollgate(launch, REPO_ROOT, tollgateFiles.configPath, tollgateEnv);
          warmed = true;
        }
        const p = await spawnReady({
          name: id,
          args: [...launch.nodeFlags, launch.entry, 'start', '--config', configPath()],
          cwd: REPO_ROOT,
          env: { ...tollgateEnv, ...launch.env },
          cpus: testCpus,
          listener: 'proxy',
          readyTimeoutMs: 30_000,
        });
        procs.push(p);
        targets.push({ id, proc: p });
      } catch (e) {
        const msg = (e as Error).message;
        missing[id] = `gateway did not start: ${msg.split('\n')[0].replace(new RegExp(`^${id}: `), '')}`;
        process.stderr.write(`${msg}\n`);
      }
    };
    await startTollgate('tollgate', () => tollgateFiles.configPath);

    // Observability all on exports to a null OTLP collector on core 0, next to the mock.
    let collector: Spawned | null = null;
    let usageFile: string | null = null;
    if (opts.targets.includes('tollgate-obs-full')) {
      try {
        collector = await spawnReady({
          name: 'null collector',
          args: [join(BENCH_DIR, 'null-collector.ts')],
          cpus: loadCpus,
          listener: 'collector',
          readyTimeoutMs: 10_000,
        });
        procs.push(collector);
      } catch (e) {
        missing['tollgate-obs-full'] = `null collector did not start: ${(e as Error).message.split('\n')[0]}`;
      }
      if (collector) {
        const files = writeTollgateObsFullConfig(join(work, 'obs-full'), mock.addr, collector.addr);
        usageFile = files.usageFile;
        await startTollgate('tollgate-obs-full', () => files.configPath);
      }
    }
    await startTollgate('tollgate-obs-off', () => writeTollgateObsOffConfig(join(work, 'obs-off'), mock.addr).configPath);

    // Every target gets the same bytes, the Tollgate key included: the others ignore it.
    const headers = { ...CLIENT_HEADERS, authorization: `Bearer ${tollgateFiles.key}` };
    for (const t of [...targets]) {
      for (const [body, stream] of [[REQUEST_JSON, false], [REQUEST_SSE, true]] as const) {
        const why = await smokeCheck(t.proc.addr, body, stream, headers);
        if (why === null) continue;
        if (t.id === 'direct') throw new Error(`mock upstream answers wrongly (${stream ? 'SSE' : 'JSON'}): ${why}`);
        missing[t.id] = `${stream ? 'SSE' : 'JSON'} check failed: ${why}`;
        targets.splice(targets.indexOf(t), 1);
        await t.proc.stop();
        procs.splice(procs.indexOf(t.proc), 1);
        break;
      }
    }
    for (const [id, why] of Object.entries(missing)) log(`${TARGET_LABELS[id as TargetId]} left out: ${why}`);
    log(`targets: ${targets.map((t) => `${t.id} ${t.proc.addr} pid ${t.proc.pid}`).join(', ')}`);

    // The process under test first, then every other process of ours that stays up.
    const pidsFor = (t: Target): number[] => [t.proc.pid, ...procs.filter((p) => p !== t.proc).map((p) => p.pid)];
    const noise = (w: Window): string =>
      w.foreignCores > FOREIGN_WARN || w.stealCores > STEAL_WARN
        ? ` [other load ${(w.foreignCores * 100).toFixed(0)}% of a core, steal ${(w.stealCores * 100).toFixed(0)}%]`
        : '';

    const allPids = (): number[] => procs.map((p) => p.pid);
    /** Waits (bounded) until nothing but us uses the CPU; returns the last foreign load seen. */
    let quietBudgetMs = profile.quietBudgetSec * 1000;
    const waitForQuiet = async (): Promise<number> => {
      const from = Date.now();
      const until = from + Math.min(profile.quietWaitSec * 1000, quietBudgetMs);
      let announced = false;
      for (;;) {
        const pids = allPids();
        const w0 = openWindow(pids);
        await sleep(500);
        const foreign = closeWindow(w0, pids).foreignCores;
        if (foreign <= FOREIGN_WARN || Date.now() >= until || pastBudget()) {
          quietBudgetMs -= Math.max(0, Date.now() - from - 500);
          return foreign;
        }
        if (!announced) log(`waiting up to ${profile.quietWaitSec} s for other load to stop (${(foreign * 100).toFixed(0)}% of a core)`);
        announced = true;
      }
    };
    let retriesLeft = profile.retries;
    const pastBudget = (): boolean => Date.now() - started > profile.limitSec * 1000 * 0.75;
    /** Runs one measurement after a quiet wait; repeats it once when other load disturbed it. */
    const measure = async (what: string, once: () => Promise<{ run: Run; line: string; win: Window }>): Promise<Run> => {
      for (;;) {
        const loadBefore = await waitForQuiet();
        const { run, line, win } = await once();
        log(`${what}: ${line}${noise(win)}`);
        await sleep(300);
        if (win.foreignCores <= FOREIGN_RETRY || retriesLeft === 0 || pastBudget()) return run;
        // Busy before it started too: the load is not a passing burst and a retry would not help.
        if (loadBefore > FOREIGN_WARN) return run;
        retriesLeft--;
        log(`${what}: disturbed by other load, measuring again (${retriesLeft} retries left)`);
      }
    };

    const saturation = async (t: Target, stream: boolean, rep: number) => {
      const url = `http://${t.proc.addr}${CHAT_PATH}`;
      const body = stream ? REQUEST_SSE : REQUEST_JSON;
      const wrkSpec = { url, body, headers, connections: opts.connections, cpus: loadCpus, workDir: work };
      await runWrk({ ...wrkSpec, durationSec: profile.satWarmupSec });
      const pids = pidsFor(t);
      const w0 = openWindow(pids);
      const wrk = await runWrk({ ...wrkSpec, durationSec: profile.satSec });
      const win = closeWindow(w0, pids);
      const run: Run = {
        kind: 'saturation',
        rep,
        stream,
        target: t.id,
        wrk,
        cpuUs: win.cpuUs,
        cpuUsPerRequest: wrk.requests > 0 ? win.cpuUs / wrk.requests : Number.NaN,
        coreBusy: win.coreBusy,
        foreignCores: win.foreignCores,
        stealCores: win.stealCores,
        rssHwmBytes: treePeakRssBytes(t.proc.pid),
      };
      const line =
        `${wrk.requestsPerSec.toFixed(0)} req/s, ${run.cpuUsPerRequest.toFixed(1)} CPU µs/req, ` +
        `cores ${win.coreBusy.map((b) => `${(b * 100).toFixed(0)}%`).join('/')}, errors ${wrk.errors}`;
      return { run, line, win };
    };

    const openLoop = async (t: Target, stream: boolean, rep: number) => {
      const pids = pidsFor(t);
      const w0 = openWindow(pids);
      const result = await runOpenLoopProcess(
        {
          url: `http://${t.proc.addr}${CHAT_PATH}`,
          body: stream ? REQUEST_SSE : REQUEST_JSON,
          headers,
          stream,
          rate: stream ? opts.sseRate : opts.rate,
          warmupSec: profile.olWarmupSec,
          durationSec: profile.olSec,
        },
        loadCpus,
      );
      const win = closeWindow(w0, pids);
      const run: Run = {
        kind: 'open-loop',
        rep,
        stream,
        target: t.id,
        result,
        foreignCores: win.foreignCores,
        stealCores: win.stealCores,
        rssHwmBytes: treePeakRssBytes(t.proc.pid),
      };
      const l = stream ? result.ttfbUs! : result.latencyUs;
      const line = `p50 ${l.p50.toFixed(0)} µs, p99 ${l.p99.toFixed(0)} µs, ok ${result.ok}/${result.scheduled}, errors ${result.errors}, dropped ${result.dropped}`;
      return { run, line, win };
    };

    const runs: Run[] = [];
    for (let rep = 0; rep < profile.reps; rep++) {
      const order = targets.map((_, i) => targets[(i + rep) % targets.length]);
      for (const stream of [false, true]) {
        for (const t of order) {
          const what = `rep ${rep + 1} ${stream ? 'SSE ' : 'JSON'} saturation ${t.id}`;
          runs.push(await measure(what, () => saturation(t, stream, rep)));
        }
      }
      for (const stream of [false, true]) {
        for (const t of order) {
          const what = `rep ${rep + 1} ${stream ? 'SSE  first byte' : 'JSON latency   '} ${t.id}`;
          runs.push(await measure(what, () => openLoop(t, stream, rep)));
        }
      }
    }

    const summaries: Partial<Record<TargetId, TargetSummary>> = {};
    const extra: Record<string, unknown> = {};
    for (const t of targets) {
      summaries[t.id] = summarizeTarget(runs, t.id, treePeakRssBytes(t.proc.pid));
      extra[t.id] = {
        addr: t.proc.addr,
        pid: t.proc.pid,
        // Where the access log goes, if anywhere: a check that it really was on.
        stdoutBytesAfterReady: t.proc.stdoutBytesAfterReady(),
        stderrBytes: t.proc.stderrBytes(),
        stderrTail: t.proc.stderrTail().slice(-1000),
      };
    }
    for (const t of targets.filter((x) => x.id === 'tollgate' || x.id === 'tollgate-obs-full')) {
      if (t.proc.stdoutBytesAfterReady() + t.proc.stderrBytes() === 0) {
        warnings.push(`${TARGET_LABELS[t.id]} wrote nothing to stdout or stderr: was its access log really on?`);
      }
    }
    const obsFull = targets.find((t) => t.id === 'tollgate-obs-full');
    if (obsFull && collector) {
      // Checks that the all-on target really exported and wrote its usage file. The exporter
      // sends every second, so the last second of traffic may still be queued: only zero is wrong.
      const exported = await fetchCollectorStats(collector.addr);
      let usageFileBytes = 0;
      try {
        usageFileBytes = usageFile === null ? 0 : statSync(usageFile).size;
      } catch {
        // missing file: reported below
      }
      extra['tollgate-obs-full'] = { ...(extra['tollgate-obs-full'] as object), collector: exported, usageFileBytes };
      if (!exported || exported.requests === 0) {
        warnings.push(`${TARGET_LABELS[obsFull.id]}: the null collector received no OTLP export: was the exporter really on?`);
      }
      if (usageFileBytes === 0) warnings.push(`${TARGET_LABELS[obsFull.id]}: its usage-event file is empty: was the file sink really on?`);
      log(
        `obs-full: collector received ${exported?.requests ?? '?'} exports (${((exported?.bytes ?? 0) / 1e6).toFixed(1)} MB), ` +
          `usage file ${(usageFileBytes / 1e6).toFixed(1)} MB`,
      );
    }
    await stopAll();
    const quietAfter = await backgroundLoad();
    if (quietAfter) warnings.push(`after the run: ${quietAfter}`);

    warnings.push(...rigWarnings(runs));
    const v = verdicts(summaries.tollgate, summaries.minimal, runs);
    const obsV = obsVerdicts(summaries['tollgate-obs-full'], summaries['tollgate-obs-off'], runs);
    const title =
      `Tollgate benchmark, ${opts.mode} (${profile.reps} rep${profile.reps > 1 ? 's, medians' : ''}), ` +
      `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`;
    const markdown = renderMarkdown({
      title,
      rate: opts.rate,
      sseRate: opts.sseRate,
      connections: opts.connections,
      summaries,
      missing,
      verdicts: v,
      obsVerdicts: obsV,
      warnings,
    });
    const resultsDir = join(BENCH_DIR, 'results');
    mkdirSync(resultsDir, { recursive: true });
    const file = join(resultsDir, `${new Date().toISOString().replace(/[:.]/g, '-')}-${opts.mode}.json`);
    const meta = {
      date: new Date().toISOString(),
      node: process.version,
      cpu: os.cpus()[0]?.model ?? 'unknown',
      cpus: cpuCount,
      kernel: os.release(),
      wrk: toolVersion('wrk', ['-v']),
      pinned: pin,
      durationSec: (Date.now() - started) / 1000,
    };
    writeFileSync(
      file,
      `${JSON.stringify({ meta, options: opts, targets: extra, missing, summaries, verdicts: v, obsVerdicts: obsV, warnings, runs }, null, 2)}\n`,
    );
    process.stdout.write(markdown);
    process.stdout.write(`\nraw results: ${file}\n`);
  } finally {
    await stopAll();
    rmSync(work, { recursive: true, force: true });
    clearTimeout(limit);
  }
}

/** Other work on the machine skews every number: null when the cores idle, else a warning. */
async function backgroundLoad(): Promise<string | null> {
  const a = readCoreTimes();
  await sleep(1000);
  const busy = coreBusyBetween(a, readCoreTimes());
  if (busy.every((b) => !(b > 0.1))) return null;
  const pct = busy.map((b) => `${(b * 100).toFixed(0)}%`).join('/');
  return `cores ${pct} busy with nothing of ours running: other load on the machine skews the results`;
}

/** Cores' worth of CPU used by processes not ours, or stolen by the hypervisor, above which a run is flagged. */
const FOREIGN_WARN = DISTURBED_FOREIGN_CORES;
const STEAL_WARN = DISTURBED_STEAL_CORES;
/** Above this a measurement is taken again (while the retry budget lasts). */
const FOREIGN_RETRY = 0.1;

/** Signs that a number measured the rig, or other work on the machine, rather than the target. */
function rigWarnings(runs: readonly Run[]): string[] {
  const w: string[] = [];
  for (const r of runs) {
    const what = `rep ${r.rep + 1} ${r.stream ? 'SSE' : 'JSON'} ${r.kind} ${r.target}`;
    if (isDisturbed(r)) {
      w.push(
        `${what}: other processes used ${(r.foreignCores * 100).toFixed(0)}% of a core ` +
          `(hypervisor steal ${(r.stealCores * 100).toFixed(0)}%) during the run: its numbers are disturbed`,
      );
    }
    if (r.kind === 'saturation') {
      if (r.wrk.errors > 0) w.push(`${what}: ${r.wrk.errors} failed requests (${r.wrk.non2xx} non-2xx)`);
      const [core0, core1] = r.coreBusy;
      if (r.target !== 'direct' && core1 < 0.9) {
        w.push(`${what}: core 1 only ${(core1 * 100).toFixed(0)}% busy: the target was not saturated, the rig may be the limit`);
      }
      if (r.target !== 'direct' && core0 > 0.97) {
        w.push(`${what}: core 0 (wrk + mock) ${(core0 * 100).toFixed(0)}% busy: the rig is near its limit`);
      }
    } else {
      const res = r.result;
      if (res.errors + res.dropped > 0) {
        w.push(`${what}: ${res.errors} errors, ${res.dropped} dropped (first: ${res.firstError ?? 'n/a'})`);
      }
      // A timer-driven sender is up to ~1 ms late by construction; beyond two periods of
      // 1 ms the generator itself was starved.
      if (res.sendLagUs.p99 > 2000) {
        w.push(`${what}: generator sent late (lag p99 ${res.sendLagUs.p99.toFixed(0)} µs): the rate was not held`);
      }
    }
  }
  return w;
}

main().catch((e: unknown) => {
  process.stderr.write(`bench: ${(e as Error).message}\n`);
  process.exit(1);
});
