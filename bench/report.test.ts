import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { OpenLoopResult } from './open-loop.ts';
import { obsVerdicts, renderMarkdown, selectTargets, summarizeTarget, verdicts, type Run, type TargetId, type TargetSummary } from './report.ts';
import { summarize } from './stats.ts';

function ol(target: TargetId, rep: number, stream: boolean, p50: number, p99: number): Run {
  const lat = { ...summarize([p50]), p50, p99 };
  const result: OpenLoopResult = {
    rate: 1000,
    scheduled: 10,
    ok: 10,
    errors: 0,
    dropped: 0,
    firstError: null,
    latencyUs: lat,
    ttfbUs: stream ? lat : null,
    sendLagUs: summarize([1]),
    elapsedSec: 1,
  };
  return { kind: 'open-loop', rep, stream, target, result, foreignCores: 0, stealCores: 0, rssHwmBytes: 0 };
}

function sat(target: TargetId, rep: number, rps: number, errors = 0): Run {
  return {
    kind: 'saturation',
    rep,
    stream: false,
    target,
    wrk: { requests: rps, durationSec: 1, requestsPerSec: rps, errors, non2xx: errors, latencyP50Us: 0, latencyP99Us: 0, latencyMaxUs: 0 },
    cpuUs: 1e6,
    cpuUsPerRequest: 1e6 / rps,
    coreBusy: [0.5, 1],
    foreignCores: 0,
    stealCores: 0,
    rssHwmBytes: 0,
  };
}

test('added latency is the median of per-repetition differences to the direct run', () => {
  const runs: Run[] = [
    ol('direct', 0, false, 100, 300),
    ol('minimal', 0, false, 300, 900),
    ol('direct', 1, false, 200, 2000), // a noisy repetition for both
    ol('minimal', 1, false, 450, 2600),
    ol('direct', 2, false, 110, 310),
    ol('minimal', 2, false, 330, 1000),
  ];
  const s = summarizeTarget(runs, 'minimal', 0);
  assert.equal(s.addedP50Us, 220); // diffs 200, 250, 220
  assert.equal(s.addedP99Us, 600); // diffs 600, 600, 690
  assert.equal(summarizeTarget(runs, 'direct', 0).addedP50Us, Number.NaN);
});

test('throughput is the median over repetitions and failures are summed', () => {
  const runs = [sat('minimal', 0, 15000), sat('minimal', 1, 9000, 3), sat('minimal', 2, 14000)];
  const s = summarizeTarget(runs, 'minimal', 0);
  assert.equal(s.jsonRps, 14000);
  assert.equal(s.errors, 3);
});

function summary(over: Partial<TargetSummary>): TargetSummary {
  return {
    jsonRps: 12000, jsonCpuUsPerRequest: 80, sseRps: 0, sseCpuUsPerStream: 0, latencyP50Us: 0, latencyP99Us: 0,
    addedP50Us: 300, addedP99Us: 900, ttfbP50Us: 0, ttfbP99Us: 0, addedTtfbP50Us: 350, addedTtfbP99Us: 0,
    peakRssBytes: 100 * 1024 * 1024, peakRssJsonBytes: 90 * 1024 * 1024, errors: 0, ...over,
  };
}

test('verdicts apply the bar and stay pending without numbers', () => {
  const minimal = summary({ jsonRps: 15000 });
  assert.deepEqual(verdicts(summary({}), minimal).map((v) => v.pass), [true, true, true, true, true]);
  const bad = verdicts(summary({ jsonRps: 11999, addedP99Us: 1001, addedTtfbP50Us: 401, peakRssBytes: 121 * 1024 * 1024, errors: 1 }), minimal);
  assert.deepEqual(bad.map((v) => v.pass), [false, false, false, false, false]);
  assert.ok(verdicts(undefined, minimal).every((v) => v.pass === null));
});

test('a verdict resting on a run disturbed by other load says so', () => {
  const quiet = [ol('direct', 0, false, 100, 300), ol('tollgate', 0, false, 300, 900)];
  const noisy = [quiet[0], { ...quiet[1], foreignCores: 0.5 }];
  const judge = (runs: Run[]) => verdicts(summary({}), summary({}), runs).find((v) => v.bar.startsWith('added p99'))!;
  assert.equal(judge(quiet).disturbed, false);
  assert.equal(judge(noisy).disturbed, true);
  const md = renderMarkdown({
    title: 't', rate: 1000, sseRate: 500, connections: 64, summaries: {}, missing: {},
    verdicts: verdicts(summary({}), summary({}), noisy), warnings: [],
  });
  assert.match(md, /\| \+900 µs \| pass \(disturbed by other load: not conclusive\) \|/);
});

test('markdown marks a missing target pending with the reason, in a full-width row', () => {
  const md = renderMarkdown({
    title: 't', rate: 1000, sseRate: 500, connections: 64,
    summaries: { direct: summary({}), minimal: summary({}) },
    missing: { tollgate: 'gateway did not start: exit 1\nstack...' },
    verdicts: verdicts(undefined, summary({})),
    warnings: [],
  });
  const row = md.split('\n').find((l) => l.startsWith('| (c) Tollgate'))!;
  assert.match(row, /pending: gateway did not start: exit 1 \|/);
  const header = md.split('\n').find((l) => l.startsWith('| target'))!;
  assert.equal(row.split('|').length, header.split('|').length);
  assert.match(md, /\| \(a\) mock upstream, direct \| 12,000 \|/);
});

test('observability on vs off: throughput loss and CPU-implied loss against the 10% bar, per repetition', () => {
  // obs-off 10,000 req/s at 80 µs/req; obs-full 9,200 req/s at 86 µs/req: 8.0% and 7.0% loss.
  const cpu = (r: Run, us: number): Run => (r.kind === 'saturation' ? { ...r, cpuUsPerRequest: us } : r);
  const runs: Run[] = [
    cpu(sat('tollgate-obs-off', 0, 10000), 80), cpu(sat('tollgate-obs-full', 0, 9200), 86),
    cpu(sat('tollgate-obs-off', 1, 10000), 80), cpu(sat('tollgate-obs-full', 1, 9500), 84),
  ];
  const off = summary({ jsonRps: 10000, jsonCpuUsPerRequest: 80 });
  const full = summary({ jsonRps: 9200, jsonCpuUsPerRequest: 86 });
  const [rps, fromCpu] = obsVerdicts(full, off, runs);
  assert.match(rps.bar, /JSON throughput loss = 1 − \(obs-full req\/s ÷ obs-off req\/s\) < 10%/);
  assert.equal(rps.value, '8.0% (10,000 → 9,200 req/s; per repetition: 8.0%, 5.0%)');
  assert.equal(rps.pass, true);
  assert.equal(rps.disturbed, false);
  assert.match(fromCpu.bar, /from CPU/);
  assert.equal(fromCpu.value, '7.0% (80.0 → 86.0 µs/req; per repetition: 7.0%, 4.8%)');
  assert.equal(fromCpu.pass, true);

  // At or past 10% fails, each bar on its own number; observability faster than off (noise) passes.
  const [rpsBad, cpuOk] = obsVerdicts(summary({ jsonRps: 9000, jsonCpuUsPerRequest: 88 }), off);
  assert.equal(rpsBad.pass, false);
  assert.equal(rpsBad.value, '10.0% (10,000 → 9,000 req/s)');
  assert.equal(cpuOk.pass, true);
  const [rpsOk, cpuBad] = obsVerdicts(summary({ jsonRps: 9500, jsonCpuUsPerRequest: 90 }), off);
  assert.deepEqual([rpsOk.pass, cpuBad.pass], [true, false]);
  const [faster] = obsVerdicts(summary({ jsonRps: 10200, jsonCpuUsPerRequest: 79 }), off);
  assert.equal(faster.value, '−2.0% (10,000 → 10,200 req/s)');
  assert.equal(faster.pass, true);

  // A disturbed run of either target makes the verdict not conclusive.
  const noisy = [runs[0], { ...runs[1], foreignCores: 0.5 }];
  assert.ok(obsVerdicts(full, off, noisy).every((v) => v.disturbed));
});

test('the observability bar is left out unless both targets ran', () => {
  assert.deepEqual(obsVerdicts(undefined, summary({})), []);
  assert.deepEqual(obsVerdicts(summary({}), undefined), []);
  const base = { title: 't', rate: 1000, sseRate: 500, connections: 64, missing: {}, warnings: [] };
  const both = { direct: summary({}), 'tollgate-obs-full': summary({ jsonRps: 9000 }), 'tollgate-obs-off': summary({ jsonRps: 10000 }) };
  const md = renderMarkdown({
    ...base, summaries: both, verdicts: verdicts(undefined, undefined),
    obsVerdicts: obsVerdicts(both['tollgate-obs-full'], both['tollgate-obs-off']),
  });
  assert.match(md, /### Observability on \(d, obs-full\) vs off \(e, obs-off\)/);
  assert.match(md, /\| observability on vs off: JSON throughput loss = 1 − \(obs-full req\/s ÷ obs-off req\/s\) < 10% \| 10\.0% \(10,000 → 9,000 req\/s\) \| FAIL \|/);
  assert.match(md, /\| observability on vs off, from CPU: .* \| 0\.0% \(80\.0 → 80\.0 µs\/req\) \| pass \|/);
  assert.match(md, /\| \(d\) Tollgate obs-full \(observability all on\) \| 9,000 \|/);
  assert.match(md, /\| \(e\) Tollgate obs-off \(observability off\) \| 10,000 \|/);
  const without = renderMarkdown({ ...base, summaries: { direct: summary({}) }, verdicts: verdicts(undefined, undefined), obsVerdicts: [] });
  assert.doesNotMatch(without, /Observability on/);
  assert.doesNotMatch(without, /obs-full/);
});

test('the observability pair runs only when asked for, by --obs or by name in --only', () => {
  assert.deepEqual(selectTargets(undefined, false), ['direct', 'minimal', 'tollgate']);
  assert.deepEqual(selectTargets(undefined, true), ['direct', 'minimal', 'tollgate', 'tollgate-obs-full', 'tollgate-obs-off']);
  assert.deepEqual(selectTargets('tollgate-obs-off, tollgate-obs-full', false), ['direct', 'tollgate-obs-full', 'tollgate-obs-off']);
  assert.deepEqual(selectTargets('minimal', true), ['direct', 'minimal', 'tollgate-obs-full', 'tollgate-obs-off']);
  assert.throws(() => selectTargets('tollgate,obs-full', false), /unknown target "obs-full"/);
});
