// Instructions per request, counted by valgrind's callgrind: an A/B of proxy builds that host noise
// cannot move. Time per request on a shared virtual machine varies ±30% between processes;
// the number of instructions a process executes for the same requests does not depend on what
// else the machine runs. Each target runs under callgrind (one thread per dump file); after a
// warm-up, each batch of a fixed number of requests is counted alone (a dump after it, which also
// restarts the count), and the main thread's count and all threads' are reported per request.
// Usage: see `bench/README.md` ("Instruction counts").

import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import http from 'node:http';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { intOption, parseTarget, startRig, type TargetSpec } from './ab-targets.ts';
import { addCallEdges, addCosts, callEdges, callersOf, functionName, largestDifferences, PerfMap, selfCostByFunction, symbolize, type CallerCost, type CallEdges } from './callgrind-functions.ts';
import { median } from './stats.ts';
import type { Spawned } from './targets.ts';
import { CHAT_PATH, CLIENT_HEADERS, REQUEST_JSON, REQUEST_SSE } from './workload.ts';

export interface InstrOptions {
  /** Requests per counted batch. */
  requests: number;
  /** Requests before the first batch (the JIT's warm-up). */
  warm: number;
  batches: number;
  concurrency: number;
  /** Keep the dump files (for callgrind_annotate) instead of deleting them. */
  keep: boolean;
  /**
   * Show this many functions whose main-thread instructions per request differ most between each
   * target and the first (the targets run with `--perf-basic-prof`, which names the JIT's code); 0: none.
   */
  functions: number;
  /**
   * Show, per target, the callers of the functions whose name matches this (a builtin, a runtime
   * function, a JS function as V8's perf map names it): calls and inclusive instructions per request.
   */
  callers: RegExp | undefined;
  sse: boolean;
  targets: TargetSpec[];
}

/** The command line, checked: every bad value is an error naming its option. */
export function parseInstrArgs(args: string[]): InstrOptions {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      requests: { type: 'string', default: '1000' },
      warm: { type: 'string', default: '3000' },
      batches: { type: 'string', default: '3' },
      concurrency: { type: 'string', default: '8' },
      sse: { type: 'boolean', default: false },
      keep: { type: 'boolean', default: false },
      functions: { type: 'string', default: '0' },
      callers: { type: 'string' },
    },
  });
  if (positionals.length === 0) throw new Error('name at least one target');
  return {
    requests: intOption('requests', values.requests, 1, 1_000_000),
    warm: intOption('warm', values.warm, 0, 1_000_000),
    batches: intOption('batches', values.batches, 1, 100),
    concurrency: intOption('concurrency', values.concurrency, 1, 1_000),
    sse: values.sse,
    keep: values.keep,
    functions: intOption('functions', values.functions, 0, 1000),
    callers: regexOption('callers', values.callers),
    targets: positionals.map(parseTarget),
  };
}

function regexOption(name: string, value: string | undefined): RegExp | undefined {
  if (value === undefined) return undefined;
  if (value === '') throw new Error(`--${name}: expected a regular expression`);
  try {
    return new RegExp(value);
  } catch (err) {
    throw new Error(`--${name}: ${(err as Error).message}`);
  }
}

/**
 * A tree and the tree its `node_modules` is in (a worktree's is usually linked to the main
 * tree's, and Node names modules by their real path), longest first.
 */
export function treeRoots(repo: string): string[] {
  const roots = [repo];
  try {
    const modules = dirname(realpathSync(join(repo, 'node_modules')));
    if (modules !== repo) roots.push(modules);
  } catch {
    // No node_modules: nothing of it to name.
  }
  return roots.sort((a, b) => b.length - a.length);
}

/** The event count of a callgrind dump (its `summary:` line; `totals:` in dumps without one). */
export function callgrindTotal(dump: string): number {
  const m = /^summary:\s*(\d+)/m.exec(dump) ?? /^totals:\s*(\d+)/m.exec(dump);
  if (m === null) throw new Error('callgrind dump without a summary or totals line');
  return Number(m[1]);
}

/**
 * The files of dump `n` of process `pid` (`--separate-threads=yes`: `<prefix>.<pid>.<n>-<thread>`),
 * by thread number; thread 1 is the main thread.
 */
export function dumpFiles(names: readonly string[], prefix: string, pid: number, n: number): Map<number, string> {
  const head = `${prefix}.${pid}.${n}-`;
  const out = new Map<number, string>();
  for (const name of names) {
    if (!name.startsWith(head)) continue;
    const thread = Number(name.slice(head.length));
    if (Number.isInteger(thread) && thread > 0) out.set(thread, name);
  }
  return out;
}

/**
 * Sends exactly `n` requests over the agent's keep-alive connections, `concurrency` at a time; any
 * answer but 200 fails. One agent serves a target's whole run: with connections that close and
 * reopen between batches, V8 threw away the request path's optimised code at the start of each
 * batch and compiled it again (bench/README.md, "Instruction counts").
 */
async function drive(addr: string, agent: http.Agent, headers: Record<string, string>, body: string, n: number, concurrency: number): Promise<void> {
  const [host, port] = addr.split(':');
  let left = n;
  const one = (): Promise<void> =>
    new Promise((resolveOne, reject) => {
      const req = http.request({ host, port: Number(port), path: CHAT_PATH, method: 'POST', headers, agent }, (res) => {
        if (res.statusCode !== 200) reject(new Error(`${addr} answered ${res.statusCode}`));
        res.resume();
        res.on('end', () => resolveOne());
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  await Promise.all(
    Array.from({ length: Math.min(concurrency, n) }, async () => {
      while (left > 0) {
        left--;
        await one();
      }
    }),
  );
}

interface Count {
  main: number;
  all: number;
  /** The main thread's dump (with --functions only). */
  mainDump?: string;
}

/** Dumps the counters of a target running under callgrind and reads the dump back. */
async function dump(p: Spawned, dir: string, n: number, keepMain = false): Promise<Count> {
  execFileSync('callgrind_control', ['--dump', String(p.pid)], { stdio: 'ignore' });
  // callgrind_control returns once the command is delivered; the files follow.
  for (let waited = 0; waited < 60_000; waited += 100) {
    const files = dumpFiles(readdirSync(dir), 'cg', p.pid, n);
    const texts = [...files].map(([thread, name]) => [thread, readFileSync(join(dir, name), 'utf8')] as const);
    // A dump file ends with its totals line once it is written whole.
    if (texts.length > 0 && texts.some(([t]) => t === 1) && texts.every(([, t]) => /^totals:/m.test(t))) {
      let all = 0;
      let main = 0;
      let mainDump: string | undefined;
      for (const [thread, text] of texts) {
        const c = callgrindTotal(text);
        all += c;
        if (thread === 1) {
          main = c;
          if (keepMain) mainDump = text;
        }
      }
      return { main, all, mainDump };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${p.name}: callgrind dump ${n} did not appear in ${dir}`);
}

async function main(): Promise<void> {
  const opts = parseInstrArgs(process.argv.slice(2));
  for (const tool of ['valgrind', 'callgrind_control']) {
    try {
      execFileSync('which', [tool], { stdio: 'ignore' });
    } catch {
      throw new Error(`${tool} is not installed (apt-get install -y valgrind)`);
    }
  }
  const work = mkdtempSync(join(tmpdir(), 'tollgate-instr-'));
  const procs: Spawned[] = [];
  const onSignal = (): void => void Promise.all(procs.map((p) => p.stop())).then(() => process.exit(130));
  process.once('SIGINT', onSignal);
  try {
    const rig = await startRig(work);
    procs.push(rig.mock, rig.collector);
    const headers = { ...CLIENT_HEADERS, authorization: `Bearer ${rig.key}`, 'content-type': 'application/json' };
    const body = opts.sse ? REQUEST_SSE : REQUEST_JSON;
    // Both need the JIT's code named (--perf-basic-prof) and the main thread's dumps.
    const byName = opts.functions > 0 || opts.callers !== undefined;
    /** Per target with --functions: main-thread self cost by function over its batches. */
    const byFunction: Array<Map<string, number>> = [];
    /** Per target with --callers: the callers of the matching functions over its batches. */
    const callers: Array<Array<[string, CallerCost]>> = [];
    const countTarget = async (s: TargetSpec, i: number): Promise<Count[]> => {
      const dir = join(work, `cg${i}`);
      mkdirSync(dir, { recursive: true });
      const p = await rig.start(s, i, {
        nodeFlags: byName ? ['--perf-basic-prof'] : [],
        wrapper: ['valgrind', '--tool=callgrind', '--smc-check=all-non-file', '--separate-threads=yes', `--callgrind-out-file=${join(dir, 'cg')}.%p`],
        cpus: '0-1',
        readyTimeoutMs: 300_000,
      });
      procs.push(p);
      const agent = new http.Agent({ keepAlive: true, maxSockets: opts.concurrency });
      try {
        await drive(p.addr, agent, headers, body, opts.warm, opts.concurrency);
        // Dump 1 holds the start and the warm-up; batch b is dump b + 1.
        await dump(p, dir, 1);
        const counts: Count[] = [];
        const costs: Array<Map<string, number>> = [];
        const edges: CallEdges[] = [];
        for (let b = 0; b < opts.batches; b++) {
          const t0 = performance.now();
          await drive(p.addr, agent, headers, body, opts.requests, opts.concurrency);
          const secs = (performance.now() - t0) / 1000;
          const c = await dump(p, dir, b + 2, byName);
          if (c.mainDump !== undefined) {
            costs.push(selfCostByFunction(c.mainDump));
            if (opts.callers !== undefined) edges.push(callEdges(c.mainDump));
          }
          counts.push({ main: c.main / opts.requests, all: c.all / opts.requests });
          process.stderr.write(
            `${s.label}: batch ${b + 1} (${secs.toFixed(0)} s): ${Math.round(c.main / opts.requests)} main-thread, ` +
              `${Math.round(c.all / opts.requests)} all-thread instructions/request\n`,
          );
        }
        if (byName) {
          const mapFile = `/tmp/perf-${p.pid}.map`;
          const map = new PerfMap(existsSync(mapFile) ? readFileSync(mapFile, 'utf8') : '');
          // Paths relative to the target's tree: two trees' functions compare by name.
          const roots = treeRoots(s.repo);
          byFunction[i] = symbolize(addCosts(costs), map, roots);
          if (opts.callers !== undefined) callers[i] = callersOf(addCallEdges(edges), opts.callers, (raw) => functionName(raw, map, roots));
          if (!opts.keep) rmSync(mapFile, { force: true });
          // --perf-basic-prof also starts V8's log, in the target's working directory (its tree).
          for (const name of readdirSync(s.repo)) {
            if (name.startsWith('isolate-') && name.endsWith(`-${p.pid}-v8.log`)) rmSync(join(s.repo, name), { force: true });
          }
        }
        return counts;
      } finally {
        agent.destroy();
        await p.stop();
      }
    };
    // As many targets at once as there are cores: a target that waits for a core takes longer per
    // request, and the work its timers do per wall-clock second weighs more on its count.
    const rows: Count[][] = [];
    let next = 0;
    const lanes = Math.min(availableParallelism(), opts.targets.length);
    await Promise.all(
      Array.from({ length: lanes }, async () => {
        while (next < opts.targets.length) {
          const i = next++;
          rows[i] = await countTarget(opts.targets[i], i);
        }
      }),
    );
    const base = median(rows[0].map((c) => c.main));
    const k = (n: number): string => `${(n / 1000).toFixed(1)}k`;
    console.log(`| target | ${opts.sse ? 'SSE stream' : 'JSON request'}: main-thread instructions (per batch) | all threads | main thread vs first |`);
    console.log('|---|---:|---:|---:|');
    for (const [i, s] of opts.targets.entries()) {
      const main = median(rows[i].map((c) => c.main));
      const all = median(rows[i].map((c) => c.all));
      const vs = i === 0 ? '' : `${main >= base ? '+' : ''}${(((main - base) / base) * 100).toFixed(1)}%`;
      console.log(`| ${s.label} | ${k(main)} (${rows[i].map((c) => k(c.main)).join(', ')}) | ${k(all)} | ${vs} |`);
    }
    const requests = opts.requests * opts.batches;
    for (let i = 1; i < byFunction.length && opts.functions > 0; i++) {
      console.log(`\nMain-thread instructions per request by function, ${opts.targets[i].label} against ${opts.targets[0].label} (largest differences):\n`);
      console.log(`| function | ${opts.targets[0].label} | ${opts.targets[i].label} | difference |\n|---|---:|---:|---:|`);
      for (const d of largestDifferences(byFunction[0], requests, byFunction[i], requests, opts.functions)) {
        const diff = d.target - d.base;
        console.log(`| ${d.name.replaceAll('|', '\\|')} | ${d.base.toFixed(0)} | ${d.target.toFixed(0)} | ${diff >= 0 ? '+' : ''}${diff.toFixed(0)} |`);
      }
    }
    for (const [i, list] of callers.entries()) {
      console.log(`\nCallers of ${opts.callers} in ${opts.targets[i].label}, per request (main thread; the calls' inclusive instructions):\n`);
      console.log('| caller | calls | instructions |\n|---|---:|---:|');
      for (const [name, c] of list.slice(0, 20)) {
        console.log(`| ${name.replaceAll('|', '\\|')} | ${(c.calls / requests).toFixed(2)} | ${(c.cost / requests).toFixed(0)} |`);
      }
    }
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    if (opts.keep) process.stderr.write(`dump files kept in ${work}/cg<target index>/\n`);
    else if (existsSync(work)) rmSync(work, { recursive: true, force: true });
  }
}

if (isAbsolute(process.argv[1] ?? '') && resolve(process.argv[1]) === import.meta.filename) await main();
