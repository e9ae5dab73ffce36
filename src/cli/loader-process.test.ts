import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bootInChild, loadInChild } from './loader-process.ts';

test('loadInChild runs the resources loader in a child process and returns its result', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-reload-'));
  try {
    const good = path.join(dir, 'good.yaml');
    fs.writeFileSync(good, '_format_version: "1"\nprovider_keys:\n  - display_name: m\n    provider: mock\n    api_key: x\n');
    const ok = await loadInChild(good);
    assert.equal(ok.ok, true);
    assert.equal(ok.ok && ok.count, 1);
    const bad = await loadInChild(path.join(dir, 'missing.yaml'));
    assert.equal(bad.ok, false);
    assert.match(!bad.ok ? bad.errors[0] : '', /^file: cannot read: ENOENT/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('the loader reads the environment as it is when the reload starts', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-reload-'));
  try {
    const file = path.join(dir, 'r.yaml');
    fs.writeFileSync(file, '_format_version: "1"\nprovider_keys:\n  - display_name: m\n    provider: mock\n    api_key: ${TOLLGATE_RELOAD_TEST_KEY}\n');
    delete process.env.TOLLGATE_RELOAD_TEST_KEY;
    const unset = await loadInChild(file);
    assert.equal(unset.ok, false);
    process.env.TOLLGATE_RELOAD_TEST_KEY = 'sk-from-env';
    const set = await loadInChild(file);
    assert.equal(set.ok && set.resources.provider_keys[0].api_key, 'sk-from-env');
  } finally {
    delete process.env.TOLLGATE_RELOAD_TEST_KEY;
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('bootInChild loads the config and the resources file it names, and says which one failed', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-boot-'));
  try {
    const resources = path.join(dir, 'r.yaml');
    fs.writeFileSync(resources, '_format_version: "1"\nprovider_keys:\n  - display_name: m\n    provider: mock\n    api_key: x\n');
    const config = path.join(dir, 'config.yaml');
    fs.writeFileSync(config, `resources_file: ${resources}\nproxy:\n  addr: 127.0.0.1:0\n`);
    const ok = await bootInChild(config, '/nonexistent/demo.yaml');
    assert.ok(ok.ok);
    assert.equal(ok.resourcesFile, resources);
    assert.equal(ok.count, 1);
    assert.equal(ok.config.proxy.addr, '127.0.0.1:0');
    assert.equal(ok.config.proxy.max_in_flight_requests, 0, 'defaults applied');

    fs.writeFileSync(config, 'proxy:\n  colour: blue\n');
    assert.deepEqual(await bootInChild(config, resources), { ok: false, stage: 'config', errors: ['proxy.colour: unknown key'] });

    fs.writeFileSync(config, 'proxy:\n  addr: 127.0.0.1:0\n');
    const demo = await bootInChild(config, path.join(dir, 'missing-demo.yaml'));
    assert.equal(!demo.ok && demo.stage, 'resources', 'no resources_file: the demo file is loaded');
    assert.equal(!demo.ok && demo.stage === 'resources' && demo.resourcesFile, path.join(dir, 'missing-demo.yaml'));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a load that does not finish in time is killed and fails, at reload and at boot', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-reload-'));
  try {
    // A FIFO nobody writes to: reading it blocks the loader for good.
    const fifo = path.join(dir, 'r.yaml');
    execFileSync('mkfifo', [fifo]);
    const r = await loadInChild(fifo, 500);
    assert.deepEqual(r, { ok: false, errors: ['reload: the loader did not finish within 500 ms'] });
    const config = path.join(dir, 'config.yaml');
    fs.writeFileSync(config, `resources_file: ${fifo}\n`);
    assert.deepEqual(await bootInChild(config, fifo, 500), { ok: false, stage: 'loader', errors: ['the loader did not finish within 500 ms'] });
    await new Promise((resolve) => setTimeout(resolve, 200));
    let children = '';
    try {
      children = execFileSync('pgrep', ['-P', String(process.pid), '-f', 'loader-child'], { encoding: 'utf8' }).trim();
    } catch {
      // pgrep exits 1 when nothing matches.
    }
    assert.equal(children, '', 'the stuck loader processes are gone');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
