// Open-loop load generator for the latency phases: request i is sent at start + i/rate whether or
// not earlier ones have answered, so a slow target cannot slow the load down and hide its own
// latency. The generator itself is `open-loop.c` (built here with the system's C compiler, once
// per version of its source): one thread on epoll with no collector, a few µs of its own per
// request, so the tails it records are the target's and the host's rather than its own. (A
// Node.js generator on this rig lags its own schedule by 1.3-1.6 ms at p99, and reads a direct
// run's p99 as 530-760 µs where this one reads 90-150 µs: bench/README.md.)
// Latency is measured from the moment a request is issued to the end of its reply, and for
// streams also to the first body byte (TTFB). Bounded: it sends rate * (warmup + duration)
// requests, never more than maxInFlight at once, and stops by itself at warmup + duration +
// timeout whatever happens. Loopback targets only.
// As a script: `open-loop.ts '<OpenLoopSpec as JSON>'` prints an OpenLoopResult as JSON.

import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { summarize, type LatencySummary } from './stats.ts';

export interface OpenLoopSpec {
  /** Full URL, host must be 127.0.0.1. */
  url: string;
  body: string;
  headers?: Record<string, string>;
  /** The reply is an SSE stream: also measure time to first body byte; it must end with `[DONE]`. */
  stream: boolean;
  /** Requests per second. */
  rate: number;
  /** Seconds sent at the same rate first, not recorded (JIT, pools, caches). */
  warmupSec: number;
  /** Seconds recorded. */
  durationSec: number;
  /** Per-request timeout, and the grace after the last send before giving up. */
  timeoutMs?: number;
  /** Requests outstanding at most (one keep-alive connection each); a due request beyond it is dropped and counted. */
  maxInFlight?: number;
}

export interface OpenLoopResult {
  rate: number;
  /** Requests in the recorded window (after warmup). */
  scheduled: number;
  ok: number;
  errors: number;
  dropped: number;
  firstError: string | null;
  /** Issue to end of reply, µs, recorded window, successful requests only. */
  latencyUs: LatencySummary;
  /** Issue to first body byte, µs (streams only). */
  ttfbUs: LatencySummary | null;
  /** How late the generator issued requests against the schedule, µs: its own health. */
  sendLagUs: LatencySummary;
  /** Recorded window length actually achieved, s. */
  elapsedSec: number;
}

const SOURCE = join(import.meta.dirname, 'open-loop.c');

/** The generator's binary, built from open-loop.c on first use (and again when the source changes). */
export function openLoopBinary(): string {
  const source = readFileSync(SOURCE);
  const uid = process.getuid?.() ?? 0;
  // This user's own directory: a binary another user could have put there is never run.
  const dir = join(tmpdir(), `tollgate-open-loop-${uid}-${createHash('sha256').update(source).digest('hex').slice(0, 16)}`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const ownedAlone = (path: string): void => {
    const st = lstatSync(path);
    if (st.isSymbolicLink() || st.uid !== uid || (st.mode & 0o022) !== 0) throw new Error(`open-loop: ${path} is not this user's alone; remove it`);
  };
  ownedAlone(dir);
  const binary = join(dir, 'open-loop');
  if (existsSync(binary)) {
    ownedAlone(binary);
    return binary;
  }
  // Built beside its final name and renamed, so a concurrent build never runs half a file.
  const building = `${binary}.${process.pid}`;
  try {
    execFileSync('cc', ['-O2', '-Wall', '-o', building, SOURCE], { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    throw new Error(`open-loop: cannot build ${SOURCE} with cc (a C compiler is needed for the latency phases): ${(err as { stderr?: Buffer }).stderr?.toString() ?? err}`);
  }
  renameSync(building, binary);
  return binary;
}

/** The spec checked: every bad value is an error naming its field. */
function checkSpec(spec: OpenLoopSpec): URL {
  const url = new URL(spec.url);
  if (url.hostname !== '127.0.0.1') throw new Error(`url: only 127.0.0.1 targets allowed, got ${url.hostname}`);
  if (!(spec.rate > 0 && spec.rate <= 50_000)) throw new Error(`rate: must be in (0, 50000], got ${spec.rate}`);
  if (!(spec.durationSec > 0 && spec.durationSec <= 600)) throw new Error(`durationSec: must be in (0, 600]`);
  if (!(spec.warmupSec >= 0 && spec.warmupSec <= 120)) throw new Error(`warmupSec: must be in [0, 120]`);
  return url;
}

/** The raw request the generator sends, head and body. */
export function rawRequest(url: URL, spec: OpenLoopSpec): Buffer {
  const body = Buffer.from(spec.body);
  const headers: Record<string, string> = { host: url.host, ...spec.headers, 'content-type': 'application/json', 'content-length': String(body.length) };
  const head = `POST ${url.pathname}${url.search} HTTP/1.1\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

/** The generator's output as a result. */
export function parseOpenLoopOutput(spec: OpenLoopSpec, out: string): OpenLoopResult {
  const lines = out.split('\n');
  const counts = lines[0].trim().split(' ').map(Number);
  if (counts.length !== 5 || counts.some((n) => !Number.isFinite(n))) throw new Error(`open-loop: unparsable output: ${out.slice(0, 400)}`);
  const [scheduled, ok, errors, dropped, elapsedUs] = counts;
  const latency: number[] = [];
  const ttfb: number[] = [];
  const lag: number[] = [];
  for (const line of lines.slice(2)) {
    if (line === '') continue;
    const [l, t, g] = line.split(' ').map(Number);
    latency.push(l);
    ttfb.push(t);
    lag.push(g);
  }
  return {
    rate: spec.rate,
    scheduled,
    ok,
    errors,
    dropped,
    firstError: lines[1] === '' ? null : lines[1],
    latencyUs: summarize(latency),
    ttfbUs: spec.stream ? summarize(ttfb) : null,
    sendLagUs: summarize(lag),
    elapsedSec: elapsedUs / 1e6,
  };
}

/**
 * Runs the generator (`cpus`: a taskset -c list to pin it to, or null for no pinning) and
 * resolves with its result; rejects on a bad spec or a generator that failed.
 */
export async function runOpenLoopProcess(spec: OpenLoopSpec, cpus: string | null): Promise<OpenLoopResult> {
  const url = checkSpec(spec);
  const binary = openLoopBinary();
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-open-loop-run-'));
  const requestFile = join(dir, 'request');
  writeFileSync(requestFile, rawRequest(url, spec));
  const timeoutMs = spec.timeoutMs ?? 5_000;
  const args = [url.port, requestFile, String(spec.rate), String(spec.warmupSec), String(spec.durationSec), String(spec.maxInFlight ?? 1_000), String(timeoutMs), spec.stream ? '1' : '0'];
  const [cmd, argv] = cpus === null ? [binary, args] : ['taskset', ['-c', cpus, binary, ...args]];
  try {
    return await new Promise((resolve, reject) => {
      const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
      const out: Buffer[] = [];
      let err = '';
      child.stdout.on('data', (d: Buffer) => out.push(d));
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      // The generator stops by itself at warmup + duration + timeout; this only catches a wedged one.
      const guard = setTimeout(() => child.kill('SIGKILL'), (spec.warmupSec + spec.durationSec) * 1000 + timeoutMs + 15_000);
      child.on('error', (e) => {
        clearTimeout(guard);
        reject(e);
      });
      child.on('close', (code) => {
        clearTimeout(guard);
        if (code !== 0) return reject(new Error(`open-loop: exit ${code}: ${err.slice(-600)}`));
        try {
          resolve(parseOpenLoopOutput(spec, Buffer.concat(out).toString()));
        } catch (e) {
          reject(e as Error);
        }
      });
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const arg = process.argv[2];
  if (!arg) {
    process.stderr.write("usage: open-loop.ts '<OpenLoopSpec JSON>'\n");
    process.exit(2);
  }
  const result = await runOpenLoopProcess(JSON.parse(arg) as OpenLoopSpec, null);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
