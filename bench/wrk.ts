// Closed-loop saturation load with wrk (Debian package `wrk`): one thread, N keep-alive
// connections, POSTing a fixed body. A Lua `done` hook prints the summary as one JSON line so
// nothing depends on wrk's human-readable output.

import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface WrkSpec {
  url: string;
  body: string;
  headers: Record<string, string>;
  connections: number;
  durationSec: number;
  /** Cores to pin wrk to (taskset -c), or null for no pinning. */
  cpus: string | null;
  /** Directory for the generated Lua script. */
  workDir: string;
}

export interface WrkResult {
  requests: number;
  durationSec: number;
  requestsPerSec: number;
  /** Socket errors plus non-2xx/3xx replies. */
  errors: number;
  non2xx: number;
  latencyP50Us: number;
  latencyP99Us: number;
  latencyMaxUs: number;
}

const MARK = 'WRK_RESULT ';

export function wrkScript(body: string, headers: Record<string, string>): string {
  if (body.includes(']==]')) throw new Error('body: must not contain "]==]"');
  const lines = ['wrk.method = "POST"', `wrk.body = [==[${body}]==]`];
  for (const [k, v] of Object.entries({ 'Content-Type': 'application/json', ...headers })) {
    lines.push(`wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`);
  }
  lines.push(
    'function done(summary, latency, requests)',
    '  local e = summary.errors',
    `  io.write(string.format('${MARK}{"requests":%d,"duration_us":%d,"connect":%d,"read":%d,` +
      `"write":%d,"status":%d,"timeout":%d,"p50":%d,"p99":%d,"max":%d}\\n',`,
    '    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,',
    '    latency:percentile(50), latency:percentile(99), latency.max))',
    'end',
  );
  return `${lines.join('\n')}\n`;
}

/** Extracts the summary the Lua hook printed. */
export function parseWrkOutput(stdout: string): WrkResult {
  const line = stdout.split('\n').find((l) => l.startsWith(MARK));
  if (!line) throw new Error(`wrk: no summary in output: ${stdout.slice(-400)}`);
  const r = JSON.parse(line.slice(MARK.length)) as Record<string, number>;
  const durationSec = r.duration_us / 1e6;
  return {
    requests: r.requests,
    durationSec,
    requestsPerSec: durationSec > 0 ? r.requests / durationSec : 0,
    errors: r.connect + r.read + r.write + r.status + r.timeout,
    non2xx: r.status,
    latencyP50Us: r.p50,
    latencyP99Us: r.p99,
    latencyMaxUs: r.max,
  };
}

export function runWrk(spec: WrkSpec): Promise<WrkResult> {
  const url = new URL(spec.url);
  if (url.hostname !== '127.0.0.1') throw new Error(`url: only 127.0.0.1 targets allowed, got ${url.hostname}`);
  const script = join(spec.workDir, 'wrk-post.lua');
  writeFileSync(script, wrkScript(spec.body, spec.headers));
  const args = ['-t1', `-c${spec.connections}`, `-d${spec.durationSec}s`, '--timeout', '2s', '-s', script, spec.url];
  const [cmd, argv] = spec.cpus === null ? ['wrk', args] : ['taskset', ['-c', spec.cpus, 'wrk', ...args]];
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    // wrk stops itself; this only guards against a hung wrk.
    const guard = setTimeout(() => child.kill('SIGKILL'), (spec.durationSec + 15) * 1000);
    child.on('error', (e) => {
      clearTimeout(guard);
      reject(new Error(`wrk: cannot run (${e.message}); install it: apt-get install -y wrk`));
    });
    child.on('close', (code) => {
      clearTimeout(guard);
      if (code !== 0) reject(new Error(`wrk: exit ${code}: ${err.slice(-400)}${out.slice(-400)}`));
      else {
        try {
          resolve(parseWrkOutput(out));
        } catch (e) {
          reject(e as Error);
        }
      }
    });
  });
}
