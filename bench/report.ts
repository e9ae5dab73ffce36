// Turns the raw runs of a benchmark into per-target medians, the pass/fail verdicts against
// Tollgate's performance bar and against the observability on/off bar, and the markdown table
// run.ts prints.

import type { OpenLoopResult } from './open-loop.ts';
import { median } from './stats.ts';
import type { WrkResult } from './wrk.ts';

export type TargetId = 'direct' | 'minimal' | 'tollgate' | 'tollgate-obs-full' | 'tollgate-obs-off';
/** Every target, in table order. */
export const TARGET_IDS: readonly TargetId[] = ['direct', 'minimal', 'tollgate', 'tollgate-obs-full', 'tollgate-obs-off'];
/** The observability on/off pair: run only when asked for (`--obs` or `--only`). */
export const OBS_TARGET_IDS: readonly TargetId[] = ['tollgate-obs-full', 'tollgate-obs-off'];
/** What `npm run bench` runs without `--only` or `--obs`. */
export const DEFAULT_TARGET_IDS: readonly TargetId[] = TARGET_IDS.filter((t) => !OBS_TARGET_IDS.includes(t));
/**
 * The targets of a run, in table order: `--only`'s list (else the default list), plus the
 * observability pair with `--obs`; direct always (it is the latency baseline). Throws on an
 * unknown name.
 */
export function selectTargets(only: string | undefined, obs: boolean): TargetId[] {
  const asked: string[] = only?.split(',').map((s) => s.trim()) ?? [...DEFAULT_TARGET_IDS];
  for (const t of asked) if (!TARGET_IDS.includes(t as TargetId)) throw new Error(`--only: unknown target "${t}"`);
  if (obs) asked.push(...OBS_TARGET_IDS);
  return TARGET_IDS.filter((t) => t === 'direct' || asked.includes(t));
}

export const TARGET_LABELS: Record<TargetId, string> = {
  direct: '(a) mock upstream, direct',
  minimal: '(b) minimal Node proxy',
  tollgate: '(c) Tollgate',
  'tollgate-obs-full': '(d) Tollgate obs-full (observability all on)',
  'tollgate-obs-off': '(e) Tollgate obs-off (observability off)',
};

export interface SaturationRun {
  kind: 'saturation';
  rep: number;
  stream: boolean;
  target: TargetId;
  wrk: WrkResult;
  /** CPU time of the process under test during the measured window, µs. */
  cpuUs: number;
  cpuUsPerRequest: number;
  /** Busy fraction of each core during the window. */
  coreBusy: number[];
  /** Cores' worth of CPU other processes on the machine used during the window. */
  foreignCores: number;
  /** Cores' worth of hypervisor steal during the window. */
  stealCores: number;
  /** Peak RSS of the process under test so far (after this run). */
  rssHwmBytes: number;
}

export interface OpenLoopRun {
  kind: 'open-loop';
  rep: number;
  stream: boolean;
  target: TargetId;
  result: OpenLoopResult;
  foreignCores: number;
  stealCores: number;
  rssHwmBytes: number;
}

export type Run = SaturationRun | OpenLoopRun;

export interface TargetSummary {
  jsonRps: number;
  jsonCpuUsPerRequest: number;
  sseRps: number;
  sseCpuUsPerStream: number;
  latencyP50Us: number;
  latencyP99Us: number;
  addedP50Us: number;
  addedP99Us: number;
  ttfbP50Us: number;
  ttfbP99Us: number;
  addedTtfbP50Us: number;
  addedTtfbP99Us: number;
  peakRssBytes: number;
  /** Peak RSS right after the first JSON saturation run, before any streaming load. */
  peakRssJsonBytes: number;
  /** Failed requests over all runs (socket errors, non-2xx, timeouts, drops). */
  errors: number;
}

export interface Verdict {
  bar: string;
  value: string;
  pass: boolean | null;
  /** A run behind the value had other load on the machine: the verdict is not trustworthy. */
  disturbed: boolean;
}

/** Cores' worth of other processes' CPU (or hypervisor steal) above which a run counts as disturbed. */
export const DISTURBED_FOREIGN_CORES = 0.08;
export const DISTURBED_STEAL_CORES = 0.02;

export function isDisturbed(r: Run): boolean {
  return r.foreignCores > DISTURBED_FOREIGN_CORES || r.stealCores > DISTURBED_STEAL_CORES;
}

function anyDisturbed(runs: readonly Run[], kind: Run['kind'], stream: boolean, targets: readonly TargetId[]): boolean {
  return runs.some((r) => r.kind === kind && r.stream === stream && targets.includes(r.target) && isDisturbed(r));
}

export const BARS = {
  throughputRatio: 0.8,
  addedP99Us: 1000,
  sseAddedTtfbUs: 400,
  peakRssMiB: 120,
  /** Largest JSON throughput loss of observability all on against off (exclusive). */
  obsThroughputLoss: 0.1,
} as const;

function find(runs: readonly Run[], kind: Run['kind'], stream: boolean, target: TargetId, rep: number): Run | undefined {
  return runs.find((r) => r.kind === kind && r.stream === stream && r.target === target && r.rep === rep);
}

function reps(runs: readonly Run[]): number[] {
  return [...new Set(runs.map((r) => r.rep))].sort((a, b) => a - b);
}

/** Median over repetitions of a per-run value; NaN when the target has no such run. */
function med(runs: readonly Run[], pick: (r: Run) => number | undefined): number {
  return median(runs.map(pick).filter((v): v is number => v !== undefined));
}

/** Median over repetitions of (target − direct) within the same repetition. */
function addedMedian(
  runs: readonly Run[],
  stream: boolean,
  target: TargetId,
  pick: (r: OpenLoopResult) => number,
): number {
  const diffs: number[] = [];
  for (const rep of reps(runs)) {
    const t = find(runs, 'open-loop', stream, target, rep);
    const d = find(runs, 'open-loop', stream, 'direct', rep);
    if (t?.kind === 'open-loop' && d?.kind === 'open-loop') diffs.push(pick(t.result) - pick(d.result));
  }
  return median(diffs);
}

export function summarizeTarget(all: readonly Run[], target: TargetId, peakRssBytes: number): TargetSummary {
  const runs = all.filter((r) => r.target === target);
  const sat = (stream: boolean) => runs.filter((r): r is SaturationRun => r.kind === 'saturation' && r.stream === stream);
  const ol = (stream: boolean) => runs.filter((r): r is OpenLoopRun => r.kind === 'open-loop' && r.stream === stream);
  let errors = 0;
  for (const r of runs) {
    errors += r.kind === 'saturation' ? r.wrk.errors : r.result.errors + r.result.dropped;
  }
  const direct = target === 'direct';
  return {
    jsonRps: med(sat(false), (r) => (r.kind === 'saturation' ? r.wrk.requestsPerSec : undefined)),
    jsonCpuUsPerRequest: med(sat(false), (r) => (r.kind === 'saturation' ? r.cpuUsPerRequest : undefined)),
    sseRps: med(sat(true), (r) => (r.kind === 'saturation' ? r.wrk.requestsPerSec : undefined)),
    sseCpuUsPerStream: med(sat(true), (r) => (r.kind === 'saturation' ? r.cpuUsPerRequest : undefined)),
    latencyP50Us: med(ol(false), (r) => (r.kind === 'open-loop' ? r.result.latencyUs.p50 : undefined)),
    latencyP99Us: med(ol(false), (r) => (r.kind === 'open-loop' ? r.result.latencyUs.p99 : undefined)),
    addedP50Us: direct ? Number.NaN : addedMedian(all, false, target, (r) => r.latencyUs.p50),
    addedP99Us: direct ? Number.NaN : addedMedian(all, false, target, (r) => r.latencyUs.p99),
    ttfbP50Us: med(ol(true), (r) => (r.kind === 'open-loop' ? r.result.ttfbUs?.p50 : undefined)),
    ttfbP99Us: med(ol(true), (r) => (r.kind === 'open-loop' ? r.result.ttfbUs?.p99 : undefined)),
    addedTtfbP50Us: direct ? Number.NaN : addedMedian(all, true, target, (r) => r.ttfbUs?.p50 ?? Number.NaN),
    addedTtfbP99Us: direct ? Number.NaN : addedMedian(all, true, target, (r) => r.ttfbUs?.p99 ?? Number.NaN),
    peakRssBytes,
    peakRssJsonBytes: sat(false).find((r) => r.rep === 0)?.rssHwmBytes ?? Number.NaN,
    errors,
  };
}

const MiB = 1024 * 1024;

/** Tollgate against its bar; a bar whose numbers are missing has pass = null. */
export function verdicts(
  tollgate: TargetSummary | undefined,
  minimal: TargetSummary | undefined,
  runs: readonly Run[] = [],
): Verdict[] {
  const ratio = tollgate && minimal ? tollgate.jsonRps / minimal.jsonRps : Number.NaN;
  const judge = (v: number, ok: (v: number) => boolean): boolean | null => (Number.isFinite(v) ? ok(v) : null);
  const t = tollgate;
  return [
    {
      bar: `JSON throughput ≥ ${BARS.throughputRatio * 100}% of (b)`,
      value: Number.isFinite(ratio) ? `${(ratio * 100).toFixed(0)}%` : '—',
      pass: judge(ratio, (v) => v >= BARS.throughputRatio),
      disturbed: anyDisturbed(runs, 'saturation', false, ['minimal', 'tollgate']),
    },
    {
      bar: `added p99 ≤ ${BARS.addedP99Us / 1000} ms at the fixed rate`,
      value: fmtUs(t?.addedP99Us ?? Number.NaN, true),
      pass: judge(t?.addedP99Us ?? Number.NaN, (v) => v <= BARS.addedP99Us),
      disturbed: anyDisturbed(runs, 'open-loop', false, ['direct', 'tollgate']),
    },
    {
      bar: `SSE first-byte overhead (p50) ≤ ${BARS.sseAddedTtfbUs} µs`,
      value: fmtUs(t?.addedTtfbP50Us ?? Number.NaN, true),
      pass: judge(t?.addedTtfbP50Us ?? Number.NaN, (v) => v <= BARS.sseAddedTtfbUs),
      disturbed: anyDisturbed(runs, 'open-loop', true, ['direct', 'tollgate']),
    },
    {
      bar: `peak RSS ≤ ${BARS.peakRssMiB} MiB`,
      value: t ? `${(t.peakRssBytes / MiB).toFixed(0)} MiB` : '—',
      pass: judge(t ? t.peakRssBytes / MiB : Number.NaN, (v) => v <= BARS.peakRssMiB),
      disturbed: false,
    },
    {
      bar: 'no failed requests',
      value: t ? String(t.errors) : '—',
      pass: t ? t.errors === 0 : null,
      disturbed: false,
    },
  ];
}

function fmtPct(v: number): string {
  if (!Number.isFinite(v)) return '—';
  const p = v * 100;
  return `${p < 0 ? '−' : ''}${Math.abs(p).toFixed(1)}%`;
}

/**
 * The observability bar: JSON throughput of (d) all on against (e) off, measured in the same
 * run, as the loss 1 − on/off; and the same loss as CPU µs/req implies it (on one saturated
 * core throughput is 1 / CPU per request): 1 − off µs/req ÷ on µs/req. Empty unless both
 * targets have numbers.
 */
export function obsVerdicts(
  full: TargetSummary | undefined,
  off: TargetSummary | undefined,
  runs: readonly Run[] = [],
): Verdict[] {
  if (!full || !off) return [];
  const limit = BARS.obsThroughputLoss;
  // Judged on the value as printed (0.1%): a loss shown as 10.0% fails, whatever its float tail.
  const judge = (v: number): boolean | null => (Number.isFinite(v) ? Math.round(v * 1000) / 1000 < limit : null);
  const disturbed = anyDisturbed(runs, 'saturation', false, OBS_TARGET_IDS);
  const perRep = (pick: (on: SaturationRun, off: SaturationRun) => number): string => {
    const losses: string[] = [];
    for (const rep of reps(runs)) {
      const a = find(runs, 'saturation', false, 'tollgate-obs-full', rep);
      const b = find(runs, 'saturation', false, 'tollgate-obs-off', rep);
      if (a?.kind === 'saturation' && b?.kind === 'saturation') losses.push(fmtPct(pick(a, b)));
    }
    return losses.length > 1 ? `; per repetition: ${losses.join(', ')}` : '';
  };
  const rpsLoss = 1 - full.jsonRps / off.jsonRps;
  const cpuLoss = 1 - off.jsonCpuUsPerRequest / full.jsonCpuUsPerRequest;
  return [
    {
      bar: `observability on vs off: JSON throughput loss = 1 − (obs-full req/s ÷ obs-off req/s) < ${limit * 100}%`,
      value:
        `${fmtPct(rpsLoss)} (${fmtInt(off.jsonRps)} → ${fmtInt(full.jsonRps)} req/s` +
        `${perRep((a, b) => 1 - a.wrk.requestsPerSec / b.wrk.requestsPerSec)})`,
      pass: judge(rpsLoss),
      disturbed,
    },
    {
      bar: `observability on vs off, from CPU: loss = 1 − (obs-off CPU µs/req ÷ obs-full CPU µs/req) < ${limit * 100}%`,
      value:
        `${fmtPct(cpuLoss)} (${off.jsonCpuUsPerRequest.toFixed(1)} → ${full.jsonCpuUsPerRequest.toFixed(1)} µs/req` +
        `${perRep((a, b) => 1 - b.cpuUsPerRequest / a.cpuUsPerRequest)})`,
      pass: judge(cpuLoss),
      disturbed,
    },
  ];
}

export function fmtInt(v: number): string {
  return Number.isFinite(v) ? Math.round(v).toLocaleString('en-US') : '—';
}

export function fmtUs(v: number, signed = false): string {
  if (!Number.isFinite(v)) return '—';
  const sign = signed && v >= 0 ? '+' : '';
  return Math.abs(v) >= 10_000 ? `${sign}${(v / 1000).toFixed(1)} ms` : `${sign}${Math.round(v)} µs`;
}

export interface RenderInput {
  title: string;
  rate: number;
  sseRate: number;
  connections: number;
  summaries: Partial<Record<TargetId, TargetSummary>>;
  /** Why a target has no numbers (did not start, failed its check). */
  missing: Partial<Record<TargetId, string>>;
  verdicts: Verdict[];
  /** The observability on/off bar (obsVerdicts); the section is left out when empty or absent. */
  obsVerdicts?: Verdict[];
  warnings: string[];
}

export function renderMarkdown(input: RenderInput): string {
  const out: string[] = [`## ${input.title}`, ''];
  out.push(
    `| target | JSON req/s (1 core) | CPU µs/req | SSE streams/s | CPU µs/stream | ` +
      `latency p50 / p99 @ ${input.rate}/s | added p50 / p99 | SSE first byte p50 @ ${input.sseRate}/s | ` +
      `added first byte p50 / p99 | peak RSS (JSON load / all) | failed |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  );
  for (const id of TARGET_IDS) {
    const s = input.summaries[id];
    if (!s) {
      const why = input.missing[id];
      if (why !== undefined) {
        const cells = [TARGET_LABELS[id], `pending: ${why.split('\n')[0].replaceAll('|', '/')}`, ...Array<string>(9).fill('')];
        out.push(`| ${cells.join(' | ')} |`);
      }
      continue;
    }
    const added = id === 'direct' ? '(baseline)' : `${fmtUs(s.addedP50Us, true)} / ${fmtUs(s.addedP99Us, true)}`;
    const addedTtfb =
      id === 'direct' ? '(baseline)' : `${fmtUs(s.addedTtfbP50Us, true)} / ${fmtUs(s.addedTtfbP99Us, true)}`;
    out.push(
      `| ${TARGET_LABELS[id]} | ${fmtInt(s.jsonRps)} | ${s.jsonCpuUsPerRequest.toFixed(1)} | ${fmtInt(s.sseRps)} | ` +
        `${s.sseCpuUsPerStream.toFixed(1)} | ${fmtUs(s.latencyP50Us)} / ${fmtUs(s.latencyP99Us)} | ${added} | ` +
        `${fmtUs(s.ttfbP50Us)} | ${addedTtfb} | ${fmtInt(s.peakRssJsonBytes / MiB)} / ${fmtInt(s.peakRssBytes / MiB)} MiB | ${s.errors} |`,
    );
  }
  out.push(
    '',
    `Row (a) is the rig's own ceiling (wrk and mock sharing core 0, ${input.connections} connections); its CPU and RSS are the mock's.`,
    '',
    '### Tollgate against its bar',
    '',
    '| bar | Tollgate | verdict |',
    '|---|---:|---|',
  );
  const verdictRow = (v: Verdict): string => {
    const verdict = v.pass === null ? 'pending' : v.pass ? 'pass' : 'FAIL';
    return `| ${v.bar} | ${v.value} | ${verdict}${v.pass !== null && v.disturbed ? ' (disturbed by other load: not conclusive)' : ''} |`;
  };
  for (const v of input.verdicts) out.push(verdictRow(v));
  if (input.obsVerdicts?.length) {
    out.push('', '### Observability on (d, obs-full) vs off (e, obs-off)', '', '| bar | loss (off → on) | verdict |', '|---|---:|---|');
    for (const v of input.obsVerdicts) out.push(verdictRow(v));
  }
  if (input.warnings.length) {
    out.push('', '### Warnings', '');
    for (const w of input.warnings) out.push(`- ${w}`);
  }
  return `${out.join('\n')}\n`;
}
