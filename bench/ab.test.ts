import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { parseTarget, startRig } from './ab-targets.ts';
import { parseAbArgs } from './ab.ts';

const repo = resolve(import.meta.dirname, '..');

test('parseTarget: a config, an optional tree, then node flags and environment variables', () => {
  const all = { file: true, exporter: true };
  assert.deepEqual(parseTarget('minimal'), { label: 'minimal', config: null, repo, nodeFlags: [], env: {}, sinks: all });
  assert.deepEqual(parseTarget('obs-full@/tmp/base --max-semi-space-size=8 TOLLGATE_OBSERVABILITY__ACCESS_LOG=false A=b=c'), {
    label: 'obs-full@/tmp/base --max-semi-space-size=8 TOLLGATE_OBSERVABILITY__ACCESS_LOG=false A=b=c',
    config: 'obs-full',
    repo: '/tmp/base',
    nodeFlags: ['--max-semi-space-size=8'],
    env: { TOLLGATE_OBSERVABILITY__ACCESS_LOG: 'false', A: 'b=c' },
    sinks: all,
  });
  // The rig's own variables shape obs-full's config and are not passed on.
  const parts = parseTarget('obs-full BENCH_OBS_FILE=0 BENCH_OBS_OTLP=1 X=1');
  assert.deepEqual([parts.sinks, parts.env], [{ file: false, exporter: true }, { X: '1' }]);
  assert.deepEqual(parseTarget('obs-full@/tmp/base BENCH_OBS_OTLP=0').sinks, { file: true, exporter: false });
  assert.throws(() => parseTarget('obs-off BENCH_OBS_FILE=0'), /BENCH_OBS_FILE is 0 or 1, for obs-full only/);
  assert.throws(() => parseTarget('obs-full BENCH_OBS_OTLP=no'), /BENCH_OBS_OTLP is 0 or 1/);
  assert.throws(() => parseTarget('nginx'), /expected minimal or one of tollgate, obs-full, obs-off/);
  assert.throws(() => parseTarget('tollgate stray'), /"stray" is neither a node flag nor NAME=value/);
});

test('parseAbArgs: saturation by default, latency with --rate, --preload-sse only with --rate', () => {
  const sat = parseAbArgs(['minimal', 'tollgate']);
  assert.equal(sat.rate, null);
  assert.equal(sat.preloadSse, 0);
  assert.deepEqual(
    sat.targets.map((t) => t.config),
    [null, 'tollgate'],
  );
  const lat = parseAbArgs(['--rate', '1000', '--preload-sse', '10', '--reps', '4', 'minimal']);
  assert.equal(lat.rate, 1000);
  assert.equal(lat.preloadSse, 10);
  assert.equal(lat.reps, 4);
  assert.throws(() => parseAbArgs(['--preload-sse', '10', 'minimal']), /--preload-sse: only with --rate/);
  assert.throws(() => parseAbArgs(['--rate', '0', 'minimal']), /--rate: must be an integer in \[1, 50000\], got 0/);
  assert.throws(() => parseAbArgs(['--reps', 'x', 'minimal']), /--reps: must be an integer/);
  assert.throws(() => parseAbArgs([]), /name at least one target/);
});

test("rig.start gives the minimal proxy the run's node flags too (bench:ab --prof, bench:instr --functions)", async () => {
  const work = mkdtempSync(join(tmpdir(), 'tollgate-rig-'));
  const rig = await startRig(work);
  try {
    const p = await rig.start(parseTarget('minimal'), 0, { nodeFlags: ['--perf-basic-prof'], cpus: '0-1' });
    const map = `/tmp/perf-${p.pid}.map`;
    try {
      assert.ok(existsSync(map), 'V8 writes its perf map only when the flag reached the process');
    } finally {
      await p.stop();
      rmSync(map, { force: true });
      // The flag also starts V8's log in the target's working directory (the tree).
      for (const name of readdirSync(repo)) if (name.endsWith(`-${p.pid}-v8.log`)) rmSync(join(repo, name), { force: true });
    }
  } finally {
    await Promise.all([rig.mock.stop(), rig.collector.stop()]);
    rmSync(work, { recursive: true, force: true });
  }
});
