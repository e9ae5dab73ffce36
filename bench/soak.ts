// Soak run: starts Tollgate as `npm start` does against the bench mock, drives a mixed load for a
// while (JSON, SSE, streams the caller aborts, distinct unknown models, distinct bad keys), then
// idles, and reports resident memory: at boot, after a short warm-up, at its peak under load and
// after the load. A gateway whose memory grows with traffic (per-key maps, label series, pools,
// buffers held after a disconnect) ends the run far above its warm level.
// `npm run bench:soak -- [--secs 120] [--idle 10] [--warmup 10] [--margin-mib 16] [--concurrency 16]`

import http from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { startMockUpstream } from './mock-upstream.ts';
import { spawnReady, tollgateLaunch, writeTollgateConfig } from './targets.ts';
import { BENCH_MODEL, CHAT_PATH, REQUEST_JSON, REQUEST_SSE } from './workload.ts';

export interface SoakOptions {
  secs: number;
  idleSecs: number;
  warmupSecs: number;
  marginMiB: number;
  concurrency: number;
}

export const SOAK_DEFAULTS: SoakOptions = { secs: 120, idleSecs: 10, warmupSecs: 10, marginMiB: 16, concurrency: 16 };

const FLAGS: Record<string, keyof SoakOptions> = {
  '--secs': 'secs',
  '--idle': 'idleSecs',
  '--warmup': 'warmupSecs',
  '--margin-mib': 'marginMiB',
  '--concurrency': 'concurrency',
};

/** Options from argv (each flag takes a positive number); throws on anything else. */
export function parseSoakArgs(argv: readonly string[]): SoakOptions {
  const out = { ...SOAK_DEFAULTS };
  for (let i = 0; i < argv.length; i += 2) {
    const key = FLAGS[argv[i]];
    const value = Number(argv[i + 1]);
    if (key === undefined) throw new Error(`unknown option ${argv[i]} (known: ${Object.keys(FLAGS).join(', ')})`);
    if (!(value > 0) || !Number.isFinite(value)) throw new Error(`${argv[i]} needs a positive number`);
    out[key] = value;
  }
  return out;
}

export interface RssSamples {
  /** After the ready line. */
  boot: number;
  /** After the warm-up load and an idle pause: the level the run is judged against. */
  warm: number;
  /** Highest sample under load. */
  peak: number;
  /** After the load and the idle pause. */
  after: number;
}

/** Did resident memory come back to within `marginMiB` of its warm level once the load stopped? */
export function soakVerdict(rss: RssSamples, marginMiB: number): { returned: boolean; growthMiB: number } {
  const growthMiB = (rss.after - rss.warm) / 2 ** 20;
  return { returned: growthMiB <= marginMiB, growthMiB: Math.round(growthMiB * 10) / 10 };
}

/** VmRSS of a process in bytes (Linux). */
function rssOf(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m === null ? 0 : Number(m[1]) * 1024;
}

type Kind = 'json' | 'sse' | 'aborted' | 'unknown_model' | 'bad_key';
const KINDS: readonly Kind[] = ['json', 'sse', 'json', 'sse', 'aborted', 'unknown_model', 'bad_key'];

/** One request of the mix; resolves when it is over, however it ended. */
function one(addr: string, key: string, kind: Kind, n: number, agent: http.Agent): Promise<void> {
  let body = kind === 'sse' || kind === 'aborted' ? REQUEST_SSE : REQUEST_JSON;
  if (kind === 'unknown_model') body = body.replace(BENCH_MODEL, `soak-unknown-${n}`);
  const auth = kind === 'bad_key' ? `tg-soak-bad-${n}` : key;
  return new Promise((resolve) => {
    const req = http.request(`http://${addr}${CHAT_PATH}`, {
      method: 'POST',
      agent: kind === 'aborted' ? false : agent,
      headers: { authorization: `Bearer ${auth}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    }, (res) => {
      if (kind === 'aborted') {
        res.once('data', () => req.destroy());
      } else {
        res.resume();
      }
      res.on('close', () => resolve());
    });
    req.on('error', () => resolve());
    req.setTimeout(10_000, () => req.destroy());
    req.end(body);
  });
}

/** Drive the mix for `secs`, sampling RSS every 250 ms; returns the request count and the peak. */
async function drive(addr: string, key: string, pid: number, secs: number, concurrency: number): Promise<{ requests: number; peak: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const until = Date.now() + secs * 1000;
  let n = 0;
  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 250);
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (Date.now() < until) {
      const i = n++;
      await one(addr, key, KINDS[i % KINDS.length], i, agent);
    }
  }));
  clearInterval(sampler);
  agent.destroy();
  return { requests: n, peak: Math.max(peak, rssOf(pid)) };
}

const mib = (b: number): string => (b / 2 ** 20).toFixed(1);

async function main(): Promise<number> {
  const opts = parseSoakArgs(process.argv.slice(2));
  const repo = fileURLToPath(new URL('..', import.meta.url));
  const launch = tollgateLaunch(repo);
  if (launch === null) throw new Error('package.json has no usable "start" script');
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-soak-'));
  const mock = await startMockUpstream();
  const files = writeTollgateConfig(dir, `127.0.0.1:${mock.port}`);
  const gw = await spawnReady({
    name: 'tollgate',
    args: [...launch.nodeFlags, launch.entry, 'start', '--config', files.configPath],
    cwd: repo,
    env: { ...process.env, ...launch.env, BENCH_KEY: files.key },
    cpus: null,
    listener: 'proxy',
    readyTimeoutMs: 30_000,
  });
  try {
    const boot = rssOf(gw.pid);
    await drive(gw.addr, files.key, gw.pid, opts.warmupSecs, opts.concurrency);
    await sleep(opts.idleSecs * 1000);
    const warm = rssOf(gw.pid);
    const load = await drive(gw.addr, files.key, gw.pid, opts.secs, opts.concurrency);
    await sleep(opts.idleSecs * 1000);
    const rss: RssSamples = { boot, warm, peak: load.peak, after: rssOf(gw.pid) };
    const verdict = soakVerdict(rss, opts.marginMiB);
    console.log(`| RSS (MiB) | boot | warm | peak | after | growth after load |`);
    console.log(`|---|---|---|---|---|---|`);
    console.log(`| tollgate | ${mib(rss.boot)} | ${mib(rss.warm)} | ${mib(rss.peak)} | ${mib(rss.after)} | ${verdict.growthMiB} |`);
    console.log(`\n${load.requests} requests in ${opts.secs} s (mix: ${KINDS.join(', ')}); ` +
      `${verdict.returned ? 'returned' : 'did NOT return'} to within ${opts.marginMiB} MiB of the warm level.`);
    return verdict.returned ? 0 : 1;
  } finally {
    await gw.stop();
    await mock.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) process.exitCode = await main();
