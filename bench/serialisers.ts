// Instructions per call of the per-request observability serialisers, counted by callgrind: each
// case runs in a child node under valgrind twice, for `--short` and `--long` calls, and the
// difference of the two totals divided by the difference of the counts is the steady-state cost
// of one call (start-up, compilation and the warm-up fall out of the difference). The child runs
// with synchronous compilation so that when optimised code arrives does not depend on how slowly
// valgrind runs it. Usage: see `bench/README.md` ("Serialisers").

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { RequestContext } from '../src/http/context.ts';
import { isoTime } from '../src/lib/iso-time.ts';
import { reportRequest, type FinalizeSinks } from '../src/observability/access-log.ts';
import { Metrics } from '../src/observability/metrics.ts';
import { encodeUsageEventSpan } from '../src/observability/otlp/span.ts';
import { usageEventMembers } from '../src/observability/usage-event-json.ts';
import { completeUsageEvent, usageEventFrom, type UsageEvent } from '../src/observability/usage-events.ts';
import { intOption } from './ab-targets.ts';
import { callgrindTotal } from './instructions.ts';
import { servedChatContext } from '../test/harness/served-context.ts';

/** A finished chat request as the bench's workload leaves it (ids as the snapshot makes them). */
function finished(i: number): RequestContext {
  const ctx = servedChatContext(`0b6e2f7a-93c4-4e8b-9d1a-5f0c2e7b${String(1000 + (i % 9000))}`);
  ctx.modelId = '5a1d3c3e-0d0b-5b8f-9b55-2f6f1e1c2a11';
  ctx.providerKeyId = '7c2e0b8e-2f7d-5e3c-8a0d-1b9f3c4d5e6f';
  ctx.apiKeyId = '9d8c7b6a-5f4e-5d3c-9b2a-1f0e9d8c7b6a';
  ctx.apiKeyName = 'bench';
  ctx.requestBytes = 180;
  ctx.responseBytes = 667;
  ctx.upstreamFirstByteMs = 30.001 + (i % 7);
  ctx.latencyMs();
  return ctx;
}

function usageEvent(ctx: RequestContext): UsageEvent {
  const e = completeUsageEvent(usageEventFrom(ctx));
  e.request_headers = { 'user-agent': 'bench/1.0', 'x-team': 'blue' };
  return e;
}

/** What each case does per call; each returns a number so that nothing is optimised away. */
export function serialiserCases(): Record<string, (i: number) => number> {
  const contexts = Array.from({ length: 1000 }, (_, i) => finished(i));
  const events = contexts.map(usageEvent);
  // Every event from another caller: no attribution text is ever kept (the worst case).
  const unkeptKey = (i: number): string => `b2c3d4e5-0000-5000-8000-${String(i).padStart(12, '0')}`;
  const unkept = events.map((e, i) => ({ ...e, api_key_id: unkeptKey(i) }));
  // (Another key name, not id, for the access line: the id is a metric label, and a new series
  // per call would count the metrics' cost, not the line's.)
  const unkeptContexts = contexts.map((_, i) => {
    const ctx = finished(i);
    ctx.apiKeyName = `bench-${i}`;
    return ctx;
  });
  const out = Buffer.allocUnsafe(1 << 16);
  const lines: string[] = [];
  const sinks: FinalizeSinks = { metrics: new Metrics(), accessLog: (l) => void (lines[0] = l) };
  return {
    /** The usage line as JSON.stringify writes it, encoded as the log writes it: the baseline. */
    'usage-stringify': (i) => out.write(`${JSON.stringify(events[i % 1000])}\n`, 0),
    'usage-line': (i) => out.write(`{${usageEventMembers(events[i % 1000])}}\n`, 0),
    /** The metrics sample and the access line of a finished request. */
    'access-report': (i) => {
      reportRequest(contexts[i % 1000], sinks, events[i % 1000].occurred_at);
      return out.write(lines[0], 0);
    },
    span: (i) => encodeUsageEventSpan(events[i % 1000]).length,
    'usage-line-unkept': (i) => out.write(`{${usageEventMembers(unkept[i % 1000])}}\n`, 0),
    'access-report-unkept': (i) => {
      reportRequest(unkeptContexts[i % 1000], sinks, events[i % 1000].occurred_at);
      return out.write(lines[0], 0);
    },
    'span-unkept': (i) => encodeUsageEventSpan(unkept[i % 1000]).length,
    /** The current time as Date#toISOString writes it, as the usage event took it before isoTime. */
    'date-iso': () => new Date().toISOString().length,
    'iso-time': () => isoTime().length,
  };
}

const SELF = fileURLToPath(import.meta.url);

function count(name: string, calls: number, dir: string): number {
  const file = join(dir, `cg.${name}.${calls}`);
  execFileSync('valgrind', ['--tool=callgrind', `--callgrind-out-file=${file}`, process.execPath,
    '--no-concurrent-recompilation', '--single-threaded-gc', SELF, '--child', name, String(calls)], { stdio: 'ignore' });
  return callgrindTotal(readFileSync(file, 'utf8'));
}

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      child: { type: 'boolean', default: false },
      short: { type: 'string', default: '20000' },
      long: { type: 'string', default: '60000' },
    },
  });
  const cases = serialiserCases();
  if (values.child) {
    const fn = cases[positionals[0]];
    let sum = 0;
    for (let i = 0, n = Number(positionals[1]); i < n; i++) sum += fn(i);
    if (sum < 0) console.log(sum);
    return;
  }
  const short = intOption('short', values.short, 1, 10_000_000);
  const long = intOption('long', values.long, short + 1, 10_000_000);
  const names = positionals.length > 0 ? positionals : Object.keys(cases);
  for (const n of names) if (!(n in cases)) throw new Error(`unknown case ${n}: one of ${Object.keys(cases).join(', ')}`);
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-serialisers-'));
  try {
    console.log('| case | instructions per call |\n|---|---:|');
    for (const n of names) console.log(`| ${n} | ${Math.round((count(n, long, dir) - count(n, short, dir)) / (long - short))} |`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === SELF) main();
