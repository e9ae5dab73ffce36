import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { loadConfig } from '../src/config/load.ts';
import { loadResourcesFile } from '../src/resources/loader.ts';
import { fetchCollectorStats, startNullCollector } from './null-collector.ts';
import {
  CAPTURED_HEADERS,
  OBS_EXPORTER_NAME,
  smokeCheck,
  spawnReady,
  tollgateLaunch,
  writeTollgateConfig,
  writeTollgateObsFullConfig,
  writeTollgateObsOffConfig,
} from './targets.ts';
import { CLIENT_HEADERS, REQUEST_JSON, REQUEST_SSE } from './workload.ts';

const here = import.meta.dirname;

test('spawnReady returns the announced address; the mock and the minimal proxy pass the smoke check', async () => {
  const mock = await spawnReady({ name: 'mock', args: [join(here, 'mock-upstream.ts')], cpus: null, listener: 'upstream', readyTimeoutMs: 10_000 });
  try {
    const proxy = await spawnReady({
      name: 'minimal',
      args: [join(here, 'minimal-proxy.ts'), `http://${mock.addr}`],
      cpus: null,
      listener: 'proxy',
      readyTimeoutMs: 10_000,
    });
    try {
      assert.match(proxy.addr, /^127\.0\.0\.1:\d+$/);
      for (const addr of [mock.addr, proxy.addr]) {
        assert.equal(await smokeCheck(addr, REQUEST_JSON, false, {}), null);
        assert.equal(await smokeCheck(addr, REQUEST_SSE, true, {}), null);
      }
      // The smoke check is not blind: asking for a stream where JSON comes back fails it.
      assert.match((await smokeCheck(proxy.addr, REQUEST_JSON, true, {})) ?? '', /data events/);
    } finally {
      await proxy.stop();
    }
  } finally {
    await mock.stop();
  }
});

test('spawnReady rejects with stderr when the process dies before its ready line', async () => {
  const dir = mkdtempSync(join(os.tmpdir(), 'bench-test-'));
  try {
    const script = join(dir, 'dies.ts');
    writeFileSync(script, "console.log('booting'); console.error('config: proxy.addr: bad address'); process.exit(3);\n");
    await assert.rejects(
      spawnReady({ name: 'tollgate', args: [script], cpus: null, listener: 'proxy', readyTimeoutMs: 10_000 }),
      (e: Error) => /exited before ready \(exit 3\)/.test(e.message) && /proxy\.addr: bad address/.test(e.message),
    );
    const wrongListener = join(dir, 'wrong.ts');
    writeFileSync(wrongListener, `console.log(JSON.stringify({event:'ready',listeners:{admin:'127.0.0.1:1'}})); setTimeout(()=>{}, 5000);\n`);
    await assert.rejects(
      spawnReady({ name: 'tollgate', args: [wrongListener], cpus: null, listener: 'proxy', readyTimeoutMs: 10_000 }),
      /no 127\.0\.0\.1 listeners\.proxy/,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('writeTollgateConfig points Tollgate at the mock with auth, alias, metrics and access log on', () => {
  const dir = mkdtempSync(join(os.tmpdir(), 'bench-test-'));
  try {
    const { configPath, key } = writeTollgateConfig(dir, '127.0.0.1:4321');
    assert.match(key, /^tg-bench-[0-9a-f]{32}$/);
    const config = parse(readFileSync(configPath, 'utf8'));
    assert.equal(config.proxy.addr, '127.0.0.1:0');
    assert.equal(config.observability.access_log, true);
    assert.equal(config.observability.metrics.prometheus.enabled, true);
    const resources = parse(readFileSync(config.resources_file, 'utf8'));
    assert.equal(resources._format_version, '1');
    assert.equal(resources.provider_keys[0].api_base, 'http://127.0.0.1:4321/v1');
    assert.deepEqual(resources.models[0], { display_name: 'bench-model', provider: 'openai', model_name: 'gpt-4o-mini', provider_key: 'bench' });
    assert.deepEqual(resources.api_keys[0], { display_name: 'bench', key_env: 'BENCH_KEY', allowed_models: ['bench-model'] });
    assert.ok(!readFileSync(configPath, 'utf8').includes(key), 'the key goes through the environment, not the files');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const BENCH_ENV = { BENCH_KEY: 'tg-bench-0123456789abcdef0123456789abcdef' };

/** Loads a generated config and its resources the way `tollgate start` does; fails the test on any error. */
function loadGenerated(configPath: string) {
  const c = loadConfig({ file: configPath, env: BENCH_ENV });
  assert.ok(c.ok, `config does not load: ${c.ok ? '' : c.errors.join('; ')}`);
  assert.ok(c.config.resources_file !== undefined);
  const r = loadResourcesFile(c.config.resources_file, BENCH_ENV);
  assert.ok(r.ok, `resources do not load: ${r.ok ? '' : r.errors.join('; ')}`);
  return { config: c.config, resources: r.resources };
}

test("every generated Tollgate config passes Tollgate's own config and resources loaders", () => {
  const dir = mkdtempSync(join(os.tmpdir(), 'bench-test-'));
  try {
    const base = loadGenerated(writeTollgateConfig(dir, '127.0.0.1:4321').configPath);
    const full = loadGenerated(writeTollgateObsFullConfig(join(dir, 'full'), '127.0.0.1:4321', '127.0.0.1:4318').configPath);
    const off = loadGenerated(writeTollgateObsOffConfig(join(dir, 'off'), '127.0.0.1:4321').configPath);
    // The on/off pair serves the same models and keys as each other; only observability differs.
    assert.deepEqual(full.resources.models, off.resources.models);
    assert.deepEqual(full.resources.api_keys, off.resources.api_keys);
    assert.deepEqual(full.resources.models, base.resources.models);
    assert.equal(full.config.proxy.addr, '127.0.0.1:0');
    assert.equal(off.config.proxy.addr, '127.0.0.1:0');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the obs-full config turns every observability feature on', () => {
  const dir = mkdtempSync(join(os.tmpdir(), 'bench-test-'));
  try {
    const files = writeTollgateObsFullConfig(join(dir, 'full'), '127.0.0.1:4321', '127.0.0.1:4318');
    const { config, resources } = loadGenerated(files.configPath);
    const o = config.observability;
    assert.equal(o.access_log, true);
    assert.equal(o.log_level, 'info', 'the access log needs info');
    assert.equal(o.metrics.prometheus.enabled, true);
    assert.equal(o.metrics.prometheus.addr, '127.0.0.1:0');
    // Every name label the schema knows, including any added later.
    assert.ok(Object.keys(o.metrics.labels).length >= 5);
    for (const [label, on] of Object.entries(o.metrics.labels)) assert.equal(on, true, `metrics label ${label} is off`);
    assert.equal(o.usage_event.file, join(dir, 'full', 'usage.ndjson'));
    assert.equal(files.usageFile, o.usage_event.file);
    assert.deepEqual(o.usage_event.request_headers, ['user-agent', 'x-team']);
    // The workload sends every captured header, so request_headers is never empty.
    assert.deepEqual([...CAPTURED_HEADERS].sort(), Object.keys(CLIENT_HEADERS).sort());
    assert.equal(o.debug.enabled, false, 'the debug listener stays as it defaults');
    assert.equal(resources.observability_exporters.length, 1);
    const ex = resources.observability_exporters[0] as unknown as Record<string, unknown>;
    assert.equal(ex.name, OBS_EXPORTER_NAME);
    assert.equal(ex.kind, 'otlp_http');
    assert.equal(ex.endpoint, 'http://127.0.0.1:4318/v1/traces');
    assert.equal(ex.content_mode, 'metadata_only');
    assert.equal(ex.sample_rate, 1);
    assert.notEqual(ex.enabled, false);
    // The name labels get real values, not `unknown`.
    const key = resources.api_keys[0] as unknown as Record<string, unknown>;
    assert.equal(key.team_id, 'bench-team');
    assert.equal(key.user_name, 'bench-user');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the obs-full config leaves out the usage file or the exporter when asked, and keeps the rest', () => {
  const dir = mkdtempSync(join(os.tmpdir(), 'bench-test-'));
  try {
    const noFile = writeTollgateObsFullConfig(join(dir, 'a'), '127.0.0.1:4321', '127.0.0.1:4318', { file: false, exporter: true });
    const a = loadGenerated(noFile.configPath);
    assert.equal(noFile.usageFile, null);
    assert.equal(a.config.observability.usage_event.file, undefined);
    assert.equal(a.resources.observability_exporters.length, 1);
    const noExporter = writeTollgateObsFullConfig(join(dir, 'b'), '127.0.0.1:4321', '127.0.0.1:4318', { file: true, exporter: false });
    const b = loadGenerated(noExporter.configPath);
    assert.equal(b.config.observability.usage_event.file, join(dir, 'b', 'usage.ndjson'));
    assert.equal(b.resources.observability_exporters.length, 0);
    assert.equal(b.config.observability.access_log, true);
    assert.deepEqual(b.config.observability.usage_event.request_headers, ['user-agent', 'x-team']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the obs-off config turns off every observability feature that can be', () => {
  const dir = mkdtempSync(join(os.tmpdir(), 'bench-test-'));
  try {
    const files = writeTollgateObsOffConfig(join(dir, 'off'), '127.0.0.1:4321');
    const { config, resources } = loadGenerated(files.configPath);
    const o = config.observability;
    assert.equal(o.access_log, false);
    assert.equal(o.metrics.prometheus.enabled, false);
    assert.equal(o.usage_event.file, undefined);
    assert.equal(o.usage_event.log, false);
    assert.equal(files.usageFile, null);
    assert.deepEqual(o.usage_event.request_headers, []);
    assert.ok(Object.values(o.metrics.labels).every((on) => on === false));
    assert.equal(o.debug.enabled, false);
    assert.deepEqual(resources.observability_exporters, []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the null collector reads an export, answers 200 with an empty response and counts it', async () => {
  const c = await startNullCollector();
  try {
    const body = Buffer.from([0x0a, 0x02, 0x12, 0x00]);
    const res = await fetch(`http://127.0.0.1:${c.port}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/x-protobuf' }, body });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/x-protobuf');
    assert.equal((await res.arrayBuffer()).byteLength, 0);
    assert.equal((await fetch(`http://127.0.0.1:${c.port}/v1/metrics`, { method: 'POST', body })).status, 404);
    assert.deepEqual(await fetchCollectorStats(`127.0.0.1:${c.port}`), { requests: 1, bytes: body.length });
  } finally {
    await c.close();
  }
  assert.equal(await fetchCollectorStats(`127.0.0.1:${c.port}`), null, 'a stopped collector answers nothing');
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls until check() holds or 5 s pass. */
async function eventually(check: () => Promise<boolean> | boolean): Promise<boolean> {
  for (let i = 0; i < 50; i++) {
    if (await check()) return true;
    await sleep(100);
  }
  return false;
}

test('Tollgate starts with the obs-full and obs-off configs, answers the workload, and obs-full exports, files and labels', async () => {
  const repo = join(here, '..');
  const dir = mkdtempSync(join(os.tmpdir(), 'bench-test-'));
  const mock = await spawnReady({ name: 'mock', args: [join(here, 'mock-upstream.ts')], cpus: null, listener: 'upstream', readyTimeoutMs: 10_000 });
  const collector = await startNullCollector();
  const env = { ...process.env, ...BENCH_ENV };
  const headers = { ...CLIENT_HEADERS, authorization: `Bearer ${BENCH_ENV.BENCH_KEY}` };
  try {
    const files = writeTollgateObsFullConfig(join(dir, 'full'), mock.addr, `127.0.0.1:${collector.port}`);
    const full = await spawnReady({
      name: 'tollgate-obs-full', args: ['src/main.ts', 'start', '--config', files.configPath], cwd: repo, env,
      cpus: null, listener: 'proxy', readyTimeoutMs: 30_000,
    });
    try {
      assert.equal(await smokeCheck(full.addr, REQUEST_JSON, false, headers), null);
      assert.equal(await smokeCheck(full.addr, REQUEST_SSE, true, headers), null);
      // The exporter ships within a second; the file sink flushes every 250 ms.
      assert.ok(await eventually(async () => ((await fetchCollectorStats(`127.0.0.1:${collector.port}`))?.requests ?? 0) > 0), 'no OTLP export arrived');
      assert.ok(collector.stats.bytes > 0);
      let lines: Array<{ request_headers: Record<string, string>; status: number }> = [];
      assert.ok(
        await eventually(() => {
          lines = readFileSync(files.usageFile!, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
          return lines.length >= 2;
        }),
        'usage file has no events',
      );
      assert.deepEqual(lines.map((l) => l.status), [200, 200]);
      assert.deepEqual(lines[0].request_headers, { 'user-agent': 'tollgate-bench/1', 'x-team': 'bench' });
      assert.ok(full.stderrBytes() > 0, 'access log and usage lines go to stderr');
      // Every name label is on, with the caller key's names as values.
      const exposition = await (await fetch(`http://${String(full.listeners.metrics)}/metrics`)).text();
      const series = exposition.split('\n').find((l) => l.startsWith('tollgate_proxy_requests_total{')) ?? '';
      for (const label of ['api_key_name="bench"', 'team_name="bench-team"', 'provider_key_name="bench"', 'user_name="bench-user"', 'policy_name="unknown"']) {
        assert.ok(series.includes(label), `${label} missing from ${series}`);
      }
    } finally {
      await full.stop();
    }

    const off = await spawnReady({
      name: 'tollgate-obs-off', args: ['src/main.ts', 'start', '--config', writeTollgateObsOffConfig(join(dir, 'off'), mock.addr).configPath],
      cwd: repo, env, cpus: null, listener: 'proxy', readyTimeoutMs: 30_000,
    });
    try {
      assert.equal(await smokeCheck(off.addr, REQUEST_JSON, false, headers), null);
      assert.equal(await smokeCheck(off.addr, REQUEST_SSE, true, headers), null);
      assert.equal(off.listeners.metrics, undefined, 'no metrics listener');
    } finally {
      await off.stop();
    }
  } finally {
    await collector.close();
    await mock.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('tollgateLaunch reads how npm start runs Tollgate: node flags and the entry script', () => {
  const repo = join(here, '..');
  const launch = tollgateLaunch(repo);
  assert.ok(launch !== null);
  assert.equal(launch.entry, join(repo, 'bin', 'tollgate.js'));
  assert.ok(launch.nodeFlags.every((f) => f.startsWith('--')), `flags: ${launch.nodeFlags.join(' ')}`);
  assert.deepEqual(launch.env, { MALLOC_ARENA_MAX: '2' });

  const dir = mkdtempSync(join(os.tmpdir(), 'bench-launch-'));
  try {
    assert.equal(tollgateLaunch(dir), null, 'no package.json');
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ scripts: { start: 'tsx src/main.ts start' } }));
    assert.equal(tollgateLaunch(dir), null, 'not a node command line');
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ scripts: { start: 'node --x=1 main.js start' } }));
    assert.equal(tollgateLaunch(dir), null, 'entry missing');
    writeFileSync(join(dir, 'main.js'), '');
    assert.deepEqual(tollgateLaunch(dir), { nodeFlags: ['--x=1'], entry: join(dir, 'main.js'), env: {} });
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ scripts: { start: 'A=1 B_2=x=y node main.js start' } }));
    assert.deepEqual(tollgateLaunch(dir), { nodeFlags: [], entry: join(dir, 'main.js'), env: { A: '1', B_2: 'x=y' } });
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ scripts: { start: 'A=1 exec node --x=1 main.js start' } }));
    assert.deepEqual(tollgateLaunch(dir), { nodeFlags: ['--x=1'], entry: join(dir, 'main.js'), env: { A: '1' } });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
