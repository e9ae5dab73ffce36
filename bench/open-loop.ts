// Open-loop load generator: sends requests on a fixed schedule (request i at start + i/rate),
// whether or not earlier ones have answered, so a slow target cannot slow the load down and
// hide its own latency. A timer wakes it and it sends every request that is due. Latency is
// measured with hrtime from the moment a request is issued to the end of its reply; for
// streams also to the first body byte (TTFB). Bounded: it sends rate * (warmup + duration)
// requests at most, never more than maxInFlight at once, and stops by itself at
// warmup + duration + timeout whatever happens. Loopback targets only.
// As a script: `open-loop.ts '<OpenLoopSpec as JSON>'` prints an OpenLoopResult as JSON.

import { spawn } from 'node:child_process';
import http from 'node:http';
import { summarize, type LatencySummary } from './stats.ts';

export interface OpenLoopSpec {
  /** Full URL, host must be 127.0.0.1. */
  url: string;
  body: string;
  headers?: Record<string, string>;
  /** The reply is an SSE stream: also measure time to first body byte. */
  stream: boolean;
  /** Requests per second. */
  rate: number;
  /** Seconds sent at the same rate first, not recorded (JIT, pools, caches). */
  warmupSec: number;
  /** Seconds recorded. */
  durationSec: number;
  /** Per-request timeout, and the grace after the last send before giving up. */
  timeoutMs?: number;
  /** Requests outstanding at most; a due request beyond it is dropped and counted. */
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

const now = (): number => Number(process.hrtime.bigint());

export function runOpenLoop(spec: OpenLoopSpec): Promise<OpenLoopResult> {
  const url = new URL(spec.url);
  if (url.hostname !== '127.0.0.1') throw new Error(`url: only 127.0.0.1 targets allowed, got ${url.hostname}`);
  if (!(spec.rate > 0 && spec.rate <= 50_000)) throw new Error(`rate: must be in (0, 50000], got ${spec.rate}`);
  if (!(spec.durationSec > 0 && spec.durationSec <= 600)) throw new Error(`durationSec: must be in (0, 600]`);
  if (!(spec.warmupSec >= 0 && spec.warmupSec <= 120)) throw new Error(`warmupSec: must be in [0, 120]`);
  const timeoutMs = spec.timeoutMs ?? 5_000;
  const maxInFlight = spec.maxInFlight ?? 1_000;
  const body = Buffer.from(spec.body);
  const headers = {
    ...spec.headers,
    'content-type': 'application/json',
    'content-length': String(body.length),
  };
  const agent = new http.Agent({ keepAlive: true, maxSockets: maxInFlight });
  const periodNs = 1e9 / spec.rate;
  const warmupCount = Math.round(spec.rate * spec.warmupSec);
  const total = warmupCount + Math.round(spec.rate * spec.durationSec);

  const latency: number[] = [];
  const ttfb: number[] = [];
  const lag: number[] = [];
  let ok = 0;
  let errors = 0;
  let dropped = 0;
  let firstError: string | null = null;
  let inFlight = 0;
  let next = 0;
  let recordStart = 0;
  let recordEnd = 0;
  let done = false;
  const start = now();

  return new Promise<OpenLoopResult>((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const hardStop = setTimeout(finish, (spec.warmupSec + spec.durationSec) * 1000 + timeoutMs);

    function fail(recorded: boolean, why: string): void {
      if (recorded) {
        errors++;
        firstError ??= why;
      }
    }

    function fire(i: number, lagNs: number): void {
      const recorded = i >= warmupCount;
      if (i === warmupCount) recordStart = now();
      if (inFlight >= maxInFlight) {
        if (recorded) dropped++;
        return;
      }
      if (recorded) lag.push(lagNs / 1e3);
      inFlight++;
      let settled = false;
      const settle = (): void => {
        if (settled) return;
        settled = true;
        inFlight--;
        if (next >= total && inFlight === 0) finish();
      };
      const t0 = now();
      const req = http.request(url, { method: 'POST', agent, headers }, (res) => {
        const status = res.statusCode ?? 0;
        let first = 0;
        let tail = '';
        res.on('data', (chunk: Buffer) => {
          if (first === 0) first = now();
          if (spec.stream) tail = chunk.toString('latin1', Math.max(0, chunk.length - 16));
        });
        res.on('end', () => {
          const t1 = now();
          if (status !== 200) fail(recorded, `status ${status}`);
          else if (spec.stream && !tail.includes('[DONE]')) fail(recorded, 'stream ended without [DONE]');
          else if (recorded) {
            ok++;
            latency.push((t1 - t0) / 1e3);
            if (spec.stream) ttfb.push(((first || t1) - t0) / 1e3);
          }
          settle();
        });
        res.on('error', (err) => {
          fail(recorded, err.message);
          settle();
        });
      });
      req.setTimeout(timeoutMs, () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)));
      req.on('error', (err) => {
        fail(recorded, err.message);
        settle();
      });
      req.end(body);
    }

    function tick(): void {
      if (done) return;
      const t = now() - start;
      while (next < total && next * periodNs <= t) {
        fire(next, t - next * periodNs);
        next++;
      }
      if (next < total) {
        const waitMs = (next * periodNs - (now() - start)) / 1e6;
        timer = setTimeout(tick, Math.max(0, Math.floor(waitMs)));
      } else {
        recordEnd = now();
        if (inFlight === 0) finish();
      }
    }

    function finish(): void {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearTimeout(hardStop);
      if (recordEnd === 0) recordEnd = now();
      const recordedSent = Math.max(0, Math.min(next, total) - warmupCount);
      // Whatever is still outstanding at the hard stop counts as failed.
      const unanswered = recordedSent - ok - errors - dropped;
      if (unanswered > 0) {
        errors += unanswered;
        firstError ??= `${unanswered} requests unanswered at the hard stop`;
      }
      agent.destroy();
      resolve({
        rate: spec.rate,
        scheduled: total - warmupCount,
        ok,
        errors,
        dropped,
        firstError,
        latencyUs: summarize(latency),
        ttfbUs: spec.stream ? summarize(ttfb) : null,
        sendLagUs: summarize(lag),
        elapsedSec: recordStart ? (recordEnd - recordStart) / 1e9 : 0,
      });
    }

    tick();
  });
}

/**
 * Runs the generator in a process of its own (`cpus`: a taskset -c list, or null for no
 * pinning), so that its event loop shares nothing with the driver that reads the targets' logs.
 */
export function runOpenLoopProcess(spec: OpenLoopSpec, cpus: string | null): Promise<OpenLoopResult> {
  const args = [import.meta.filename, JSON.stringify(spec)];
  const [cmd, argv] = cpus === null ? [process.execPath, args] : ['taskset', ['-c', cpus, process.execPath, ...args]];
  return new Promise((resolvePromise, reject) => {
    const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const limitMs = (spec.warmupSec + spec.durationSec) * 1000 + (spec.timeoutMs ?? 5000) + 15_000;
    const guard = setTimeout(() => child.kill('SIGKILL'), limitMs);
    child.on('close', (code) => {
      clearTimeout(guard);
      if (code !== 0) return reject(new Error(`open-loop: exit ${code}: ${err.slice(-600)}`));
      try {
        resolvePromise(JSON.parse(out) as OpenLoopResult);
      } catch {
        reject(new Error(`open-loop: unparsable output: ${out.slice(0, 400)} ${err.slice(-400)}`));
      }
    });
  });
}

if (import.meta.main) {
  const arg = process.argv[2];
  if (!arg) {
    process.stderr.write("usage: open-loop.ts '<OpenLoopSpec JSON>'\n");
    process.exit(2);
  }
  const result = await runOpenLoop(JSON.parse(arg) as OpenLoopSpec);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
