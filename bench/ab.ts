// Side-by-side A/B of two or more proxy builds on one core: for finding out whether a change
// to the hot path pays, where `run.ts` (every phase, every target) is too slow and too coarse.
// Each target runs pinned to core 1 against one mock (and one null OTLP collector) on core 0;
// repetitions interleave the targets, each measuring saturation throughput with wrk and the
// target's own CPU time per request, or (`--rate`) latency at a fixed rate with the open-loop
// generator. Usage: see `bench/README.md` ("A/B runs").

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { coreBusyBetween, readCoreTimes, threadCpuMicros, treeCpuMicros, treePeakRssBytes } from './procstat.ts';
import { median } from './stats.ts';
import { intOption, parseTarget, startRig, type TargetSpec } from './ab-targets.ts';
import type { Spawned } from './targets.ts';
import { fetchCollectorStats } from './null-collector.ts';
import { runOpenLoopProcess, type OpenLoopResult } from './open-loop.ts';
import { CHAT_PATH, CLIENT_HEADERS, REQUEST_JSON, REQUEST_SSE } from './workload.ts';
import { runWrk } from './wrk.ts';

export interface AbOptions {
  reps: number;
  secs: number;
  warm: number;
  connections: number;
  sse: boolean;
  prof: string | undefined;
  /** Latency mode: open-loop requests per second (null: saturation with wrk). */
  rate: number | null;
  /** Latency mode: seconds of SSE saturation before each measurement (0: none). */
  preloadSse: number;
  targets: TargetSpec[];
}

/** The command line, checked: every bad value is an error naming its option. */
export function parseAbArgs(args: string[]): AbOptions {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      reps: { type: 'string', default: '3' },
      secs: { type: 'string', default: '5' },
      warm: { type: 'string', default: '3' },
      connections: { type: 'string', default: '64' },
      sse: { type: 'boolean', default: false },
      prof: { type: 'string' },
      rate: { type: 'string' },
      'preload-sse': { type: 'string', default: '0' },
    },
  });
  if (positionals.length === 0) throw new Error('name at least one target');
  const rate = values.rate === undefined ? null : intOption('rate', values.rate, 1, 50_000);
  const preloadSse = intOption('preload-sse', values['preload-sse'], 0, 600);
  if (preloadSse > 0 && rate === null) throw new Error('--preload-sse: only with --rate (it precedes each latency measurement)');
  return {
    reps: intOption('reps', values.reps, 1, 100),
    secs: intOption('secs', values.secs, 1, 600),
    warm: intOption('warm', values.warm, 0, 600),
    connections: intOption('connections', values.connections, 1, 10_000),
    sse: values.sse,
    prof: values.prof,
    rate,
    preloadSse,
    targets: positionals.map(parseTarget),
  };
}

async function main(): Promise<void> {
  const opts = parseAbArgs(process.argv.slice(2));
  const specs = opts.targets;
  const { reps, secs, warm } = opts;
  // This process reads every target's log stream (megabytes a second with the access log on):
  // on the measured core it would take its time from the target that logs most.
  execFileSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });
  const work = mkdtempSync(join(tmpdir(), 'tollgate-ab-'));
  const procs: Spawned[] = [];
  const onSignal = (): void => void Promise.all(procs.map((p) => p.stop())).then(() => process.exit(130));
  process.once('SIGINT', onSignal);
  try {
    const rig = await startRig(work);
    procs.push(rig.mock, rig.collector);
    const { collector } = rig;
    const profFlags = (i: number): string[] =>
      opts.prof === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${join(resolve(opts.prof), `t${i}`)}`];
    const started: Spawned[] = [];
    for (const [i, s] of specs.entries()) {
      const p = await rig.start(s, i, { nodeFlags: profFlags(i) });
      procs.push(p);
      started.push(p);
    }
    const headers = { ...CLIENT_HEADERS, authorization: `Bearer ${rig.key}`, 'content-type': 'application/json' };
    const body = opts.sse ? REQUEST_SSE : REQUEST_JSON;
    const rows = specs.map(() => ({ rps: [] as number[], cpu: [] as number[], threads: new Map<string, number[]>() }));
    const wrk = (p: Spawned, durationSec: number, requestBody = body) =>
      runWrk({
        url: `http://${p.addr}${CHAT_PATH}`,
        body: requestBody,
        headers,
        connections: opts.connections,
        durationSec,
        cpus: '0',
        workDir: work,
      });
    if (opts.rate !== null) {
      await latencyAb(opts, specs, started, headers, wrk);
      return;
    }
    for (let r = 0; r < reps; r++) {
      // Rotate the order so no target always runs first (or right after the same neighbour).
      for (let k = 0; k < specs.length; k++) {
        const i = (k + r) % specs.length;
        const p = started[i];
        await wrk(p, warm);
        const cpu0 = treeCpuMicros(p.pid);
        const threads0 = threadCpuMicros(p.pid);
        const cores0 = readCoreTimes();
        const res = await wrk(p, secs);
        // A target whose core is not busy was held back by the rig (core 0: wrk, mock, collector).
        const busy = coreBusyBetween(cores0, readCoreTimes()).map((b) => `${(b * 100).toFixed(0)}%`).join('/');
        const cpu = (treeCpuMicros(p.pid) - cpu0) / res.requests;
        rows[i].rps.push(res.requestsPerSec);
        rows[i].cpu.push(cpu);
        for (const [name, micros] of threadCpuMicros(p.pid)) {
          const list = rows[i].threads.get(name) ?? [];
          list.push((micros - (threads0.get(name) ?? 0)) / res.requests);
          rows[i].threads.set(name, list);
        }
        process.stderr.write(
          `rep ${r + 1} ${specs[i].label}: ${res.requestsPerSec.toFixed(0)} req/s, ${cpu.toFixed(1)} CPU µs/req, cores busy ${busy}` +
            (res.errors > 0 ? `, ${res.errors} errors` : '') +
            '\n',
        );
      }
    }
    const exports = await fetchCollectorStats(collector.addr);
    if (exports !== null && exports.requests > 0) {
      process.stderr.write(`null collector: ${exports.requests} exports, ${(exports.bytes / exports.requests / 1024).toFixed(0)} KiB each\n`);
    }
    console.log(`| target | ${opts.sse ? 'SSE streams' : 'JSON req'}/s | CPU µs/req (per rep) | by thread (medians) | peak RSS |`);
    console.log('|---|---:|---:|---|---:|');
    for (const [i, s] of specs.entries()) {
      const cpus = rows[i].cpu.map((c) => c.toFixed(1)).join(', ');
      const rss = (treePeakRssBytes(started[i].pid) / 2 ** 20).toFixed(0);
      const threads = [...rows[i].threads]
        .map(([name, list]) => [name, median(list)] as const)
        .filter(([, micros]) => micros >= 0.1)
        .sort((a, b) => b[1] - a[1])
        .map(([name, micros]) => `${name} ${micros.toFixed(1)}`)
        .join(', ');
      console.log(`| ${s.label} | ${median(rows[i].rps).toFixed(0)} | ${median(rows[i].cpu).toFixed(1)} (${cpus}) | ${threads} | ${rss} MiB |`);
    }
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * Latency mode: per target and repetition, an optional SSE saturation (`--preload-sse`), then the
 * open-loop generator at `--rate` on core 0 (warm-up, then the measured window). Prints p50 and
 * p99 (to the end of the reply; to the first byte with `--sse`) and the generator's own lag.
 */
async function latencyAb(
  opts: AbOptions,
  specs: TargetSpec[],
  started: Spawned[],
  headers: Record<string, string>,
  wrk: (p: Spawned, durationSec: number, body?: string) => Promise<unknown>,
): Promise<void> {
  const rows = specs.map(() => [] as OpenLoopResult[]);
  for (let r = 0; r < opts.reps; r++) {
    for (let k = 0; k < specs.length; k++) {
      const i = (k + r) % specs.length;
      const p = started[i];
      if (opts.preloadSse > 0) await wrk(p, opts.preloadSse, REQUEST_SSE);
      const res = await runOpenLoopProcess(
        {
          url: `http://${p.addr}${CHAT_PATH}`,
          body: opts.sse ? REQUEST_SSE : REQUEST_JSON,
          headers,
          stream: opts.sse,
          rate: opts.rate!,
          warmupSec: opts.warm,
          durationSec: opts.secs,
        },
        '0',
      );
      rows[i].push(res);
      const l = latencyOf(res, opts.sse);
      process.stderr.write(
        `rep ${r + 1} ${specs[i].label}: p50 ${l.p50.toFixed(0)} µs, p99 ${l.p99.toFixed(0)} µs, max ${l.max.toFixed(0)} µs, ` +
          `generator lag p99 ${res.sendLagUs.p99.toFixed(0)} µs, ok ${res.ok}/${res.scheduled}` +
          (res.errors + res.dropped > 0 ? `, errors ${res.errors}, dropped ${res.dropped}` : '') +
          '\n',
      );
    }
  }
  const what = opts.sse ? 'first byte' : 'latency';
  console.log(`| target | ${what} p50 | ${what} p99 (per rep) | generator lag p99 | failed | peak RSS |`);
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const [i, s] of specs.entries()) {
    const ls = rows[i].map((res) => latencyOf(res, opts.sse));
    const p99s = ls.map((l) => l.p99.toFixed(0)).join(', ');
    const failed = rows[i].reduce((n, res) => n + res.errors + res.dropped, 0);
    const rss = (treePeakRssBytes(started[i].pid) / 2 ** 20).toFixed(0);
    console.log(
      `| ${s.label} | ${median(ls.map((l) => l.p50)).toFixed(0)} µs | ${median(ls.map((l) => l.p99)).toFixed(0)} µs (${p99s}) | ` +
        `${median(rows[i].map((res) => res.sendLagUs.p99)).toFixed(0)} µs | ${failed} | ${rss} MiB |`,
    );
  }
}

const latencyOf = (res: OpenLoopResult, stream: boolean) => (stream ? res.ttfbUs! : res.latencyUs);

if (isAbsolute(process.argv[1] ?? '') && resolve(process.argv[1]) === import.meta.filename) await main();
