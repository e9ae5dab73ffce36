import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createReloader, loadInChild } from './reload.ts';
import type { LoadResult } from '../resources/loader.ts';

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

test('requests during a load are coalesced into one more load, results in order', async () => {
  const gates: Array<(r: LoadResult) => void> = [];
  const results: number[] = [];
  let n = 0;
  const reloader = createReloader(
    'f',
    (r) => results.push(r.ok ? r.count : -1),
    () => new Promise<LoadResult>((resolve) => gates.push(resolve)),
  );
  reloader.request();
  reloader.request();
  reloader.request();
  assert.equal(gates.length, 1, 'one load at a time');
  gates[0]({ ok: true, resources: {} as never, count: ++n });
  await new Promise((r) => setImmediate(r));
  assert.equal(gates.length, 2, 'the requests made during the first load lead to exactly one more');
  gates[1]({ ok: true, resources: {} as never, count: ++n });
  await reloader.idle();
  assert.deepEqual(results, [1, 2]);
  reloader.request();
  assert.equal(gates.length, 3, 'an idle reloader starts a load at once');
  gates[2]({ ok: false, errors: ['x'] });
  await reloader.idle();
  assert.deepEqual(results, [1, 2, -1]);
});
