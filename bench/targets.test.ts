import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { smokeCheck, spawnReady, writeTollgateConfig } from './targets.ts';
import { REQUEST_JSON, REQUEST_SSE } from './workload.ts';

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
