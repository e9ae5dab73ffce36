// E2E: the serving process never loads the loader (docs/architecture.md): the bootstrap config
// and the resources file are read, parsed and validated in a short-lived child process, so the
// YAML parser, the schema builder and compiler and the resource schemas (several MiB of code
// and compiled validators) are not resident in the gateway, at boot or after a reload.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { startGateway } from '../harness/spawn.ts';

const HOOK = fileURLToPath(new URL('../harness/loaded-modules-hook.ts', import.meta.url));
const LOADER_PACKAGES = ['yaml', '@sinclair/typebox', 'ajv', 'ajv-formats'];

test('the serving process loads none of the loader\'s modules, at boot or on reload; its loader child does', async (t) => {
  const gw = await startGateway({
    config: { proxy: { addr: '127.0.0.1:0' }, observability: { metrics: { prometheus: { addr: '127.0.0.1:0' } } } },
    resources: { _format_version: '1', provider_keys: [{ display_name: 'm', provider: 'mock', api_key: 'x' }] },
    env: { NODE_OPTIONS: `--import ${HOOK}` },
  });
  t.after(() => gw.stop());
  gw.signal('SIGHUP');
  const deadline = Date.now() + 10_000;
  while (!gw.stderrText().includes('"resources reloaded"')) {
    if (Date.now() > deadline) assert.fail(`no reload within 10 s\n${gw.stderrText()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  const loaded = new Map<string, string[]>();
  for (const m of gw.stderrText().matchAll(/^loaded-module (\d+) (\S+)$/gm)) {
    const list = loaded.get(m[1]) ?? [];
    list.push(m[2]);
    loaded.set(m[1], list);
  }
  const serving = loaded.get(String(gw.proc.pid)) ?? [];
  assert.ok(serving.some((u) => u.endsWith('/src/ai/proxy.ts')), 'the hook saw the serving process load its modules');
  const offending = serving.filter((u) =>
    LOADER_PACKAGES.some((p) => u.includes(`/node_modules/${p}/`)) ||
    /\/src\/(resources|config)\/(?!issues\.ts$|address\.ts$)/.test(u),
  );
  assert.deepEqual(offending, [], 'modules of the loader in the serving process');
  // The loads did happen, in children: one at boot, one for the reload.
  const children = [...loaded].filter(([pid, urls]) => pid !== String(gw.proc.pid) && urls.some((u) => u.endsWith('/src/resources/loader.ts')));
  assert.equal(children.length, 2, 'one loader child at boot, one for the reload');
});
