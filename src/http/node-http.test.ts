import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';

test("loading the gateway's modules does not load Node's bundled undici", () => {
  // start.ts imports every module a running gateway serves with (listeners, the AI proxy,
  // pass-through, the OTLP exporter); the admin API loads on demand.
  const start = new URL('../cli/start.ts', import.meta.url).href;
  const script = `await import(${JSON.stringify(start)});
const http = process.getBuiltinModule('node:http');
http.createServer().close();
console.log(JSON.stringify(process.moduleLoadList.filter((m) => m.includes('deps/undici'))));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.deepEqual(JSON.parse(out.trim().split('\n').at(-1) as string), []);
});
