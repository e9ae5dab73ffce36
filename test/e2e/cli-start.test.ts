// E2E: `tollgate start` as a real process. The ready line (exactly one JSON line on stdout naming
// every bound address, nothing else on stdout, logs on stderr), the listeners it names (proxy
// probes, metrics, admin health behind the admin key), the built-in demo resources served with
// no config at all (the demo curl, through the official openai SDK), TOLLGATE_CONFIG and
// TOLLGATE_<SECTION>__<KEY> overrides.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import OpenAI from 'openai';
import { repoRoot, startGateway, type Gateway } from '../harness/spawn.ts';

const mainTs = path.join(repoRoot, 'src', 'main.ts');
const ADDR = /^127\.0\.0\.1:(\d+)$/;
const ADMIN_KEY = 'adm-e2e-key-1';
const CALLER_KEY = 'sk-e2e-caller';
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

const RESOURCES = {
  _format_version: '1',
  provider_keys: [{ display_name: 'm', provider: 'mock', api_key: 'x' }],
  models: [{ display_name: 'demo', provider: 'mock', model_name: 'm1', provider_key: 'm' }],
  api_keys: [{ display_name: 'caller', key_hash: sha256(CALLER_KEY), allowed_models: ['*'] }],
};

function client(baseUrl: string, apiKey: string): OpenAI {
  return new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey, maxRetries: 0, timeout: 10_000 });
}

/** The port of a free 127.0.0.1 address (bound and released; good enough for one test). */
async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((resolve) => s.close(resolve));
  return port;
}

interface Raw {
  proc: ChildProcess;
  /** Every byte of stdout so far. */
  stdout(): string;
  stderr(): string;
  ready: Record<string, any>;
  closed: Promise<number | null>;
  stop(): Promise<number | null>;
}

/**
 * Spawn `tollgate start` with exactly these arguments, without the harness (which always passes
 * --config). Keeps every byte of stdout so a test can assert nothing but the ready line is there.
 */
async function spawnRaw(args: string[], env: Record<string, string>, cwd: string, nodeArgs: string[] = [mainTs]): Promise<Raw> {
  const clean: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('TOLLGATE_') && k !== 'NODE_TEST_CONTEXT') clean[k] = v;
  }
  const proc = spawn(process.execPath, [...nodeArgs, ...args], { cwd, env: { ...clean, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
  proc.stderr!.setEncoding('utf8').on('data', (c: string) => (err += c));
  const closed = once(proc, 'close').then(([code]) => code as number | null);
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
    const killer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
    const code = await closed;
    clearTimeout(killer);
    return code;
  };
  const deadline = Date.now() + 15_000;
  while (!out.includes('\n')) {
    if (proc.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`tollgate ${args.join(' ')} did not print a ready line\nstdout: ${out}\nstderr: ${err}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  const ready = JSON.parse(out.slice(0, out.indexOf('\n')));
  return { proc, stdout: () => out, stderr: () => err, ready, closed, stop };
}

/** stderr's JSON log lines; any other line fails the test (logs are structured). */
function logLines(stderr: string): Array<Record<string, any>> {
  return stderr
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => {
      try {
        return JSON.parse(l);
      } catch {
        assert.fail(`stderr line is not a JSON log line: ${l}`);
      }
    });
}

describe('start with every listener on port 0', () => {
  let gw: Gateway;
  let ready: Record<string, any>;

  before(async () => {
    gw = await startGateway({
      config: {
        proxy: { addr: '127.0.0.1:0' },
        admin: { enabled: true, addr: '127.0.0.1:0', admin_keys: [ADMIN_KEY] },
        observability: { metrics: { prometheus: { addr: '127.0.0.1:0' } } },
      },
      resources: RESOURCES,
    });
    ready = JSON.parse(gw.stdout[0]);
  });
  after(() => gw?.stop());

  test('the ready line names every bound address, each a real free port', () => {
    assert.equal(gw.stdout.length, 1, `stdout: ${gw.stdout.join('\n')}`);
    assert.equal(ready.event, 'ready');
    assert.equal(ready.pid, gw.proc.pid);
    assert.deepEqual(Object.keys(ready.listeners).sort(), ['admin', 'metrics', 'proxy']);
    const ports = Object.values(ready.listeners).map((a) => {
      const m = ADDR.exec(a as string);
      assert.ok(m, `not host:port: ${String(a)}`);
      return Number(m[1]);
    });
    for (const p of ports) assert.ok(p > 0, 'port 0 printed instead of the bound port');
    assert.equal(new Set(ports).size, 3, 'listeners share a port');
  });

  test('/livez and /readyz answer 200 ok once ready', async () => {
    for (const probe of ['/livez', '/readyz']) {
      const res = await fetch(`${gw.proxyUrl}${probe}`);
      assert.equal(res.status, 200, probe);
      assert.equal(await res.text(), 'ok', probe);
    }
  });

  test('the proxy listener serves the resources file through the openai SDK', async () => {
    const r = await client(gw.proxyUrl, CALLER_KEY).chat.completions.create({
      model: 'demo',
      messages: [{ role: 'user', content: 'hello' }],
    });
    assert.equal(r.model, 'demo');
    assert.equal(typeof r.choices[0].message.content, 'string');
  });

  test('the metrics listener serves /metrics and /status/config', async () => {
    const m = await fetch(`${gw.metricsUrl}/metrics`);
    assert.equal(m.status, 200);
    assert.match(await m.text(), /^tollgate_config_generation 1$/m);
    const s = await fetch(`${gw.metricsUrl}/status/config`);
    assert.equal(s.status, 200);
    const status = (await s.json()) as Record<string, any>;
    assert.equal(status.generation, 1);
    assert.deepEqual(status.source, { type: 'file', path: gw.resourcesPath });
  });

  test('the admin health check needs the admin key', async () => {
    const url = `${gw.adminUrl}/tollgate/admin/health`;
    for (const headers of [{}, { authorization: 'Bearer wrong-key' }, { authorization: `Basic ${ADMIN_KEY}` }] as Array<Record<string, string>>) {
      const res = await fetch(url, { headers });
      assert.equal(res.status, 401, JSON.stringify(headers));
      const body = (await res.json()) as Record<string, any>;
      assert.equal(typeof body.error_msg, 'string', JSON.stringify(body));
      assert.ok(body.error_msg.length > 0);
    }
    const ok = await fetch(url, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
    assert.equal(ok.status, 200);
    assert.deepEqual(await ok.json(), { status: 'ok', generation: 1 });
    const viaHeader = await fetch(url, { headers: { 'x-api-key': ADMIN_KEY } });
    assert.equal(viaHeader.status, 200);
    await viaHeader.arrayBuffer();
  });

  test('the admin listener is not the proxy: the admin key opens nothing on the proxy', async () => {
    const res = await fetch(`${gw.proxyUrl}/tollgate/admin/health`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
    assert.equal(res.status, 404);
    await res.arrayBuffer();
  });

  test('a CONNECT gets a 405 with Allow from every listener, the admin one (Fastify) included', async () => {
    for (const [url, allow] of [
      [gw.adminUrl!, 'GET, HEAD'],
      [gw.proxyUrl, 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS'],
      [gw.metricsUrl!, 'GET, HEAD'],
    ]) {
      const { hostname, port } = new URL(url);
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = net.connect(Number(port), hostname, () => socket.write('CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n'));
        let got = '';
        socket.setEncoding('latin1').on('data', (d: string) => (got += d));
        socket.on('error', reject).on('close', () => resolve(got));
      });
      assert.match(answer, /^HTTP\/1\.1 405 Method Not Allowed\r\n/, url);
      assert.ok(answer.includes(`\r\nAllow: ${allow}\r\n`), `${url}: ${answer}`);
    }
  });

  test('stdout holds only the ready line; logs are JSON lines on stderr', async () => {
    // After traffic (access log lines), nothing new may have reached stdout.
    assert.deepEqual(gw.stdout, [JSON.stringify(ready)]);
    const started = logLines(gw.stderrText()).find((l) => l.msg === 'tollgate started');
    assert.ok(started, `no "tollgate started" log line on stderr:\n${gw.stderrText()}`);
  });
});

describe('where the config comes from', { concurrency: true }, () => {
  let cwd: string;
  before(() => {
    cwd = fs.mkdtempSync(os.tmpdir() + '/tollgate-cwd-');
  });
  after(() => fs.rmSync(cwd, { recursive: true, force: true }));

  test('serves the built-in demo resources: the README curl answers 200 via the openai SDK', async (t) => {
    // No --config, no TOLLGATE_CONFIG, run from an unrelated directory: defaults plus env only.
    const gw = await spawnRaw(
      ['start'],
      {
        TOLLGATE_PROXY__ADDR: '127.0.0.1:0',
        TOLLGATE_OBSERVABILITY__METRICS__PROMETHEUS__ADDR: '127.0.0.1:0',
      },
      cwd,
    );
    t.after(() => gw.stop());
    assert.deepEqual(Object.keys(gw.ready.listeners).sort(), ['metrics', 'proxy']);
    for (const a of Object.values(gw.ready.listeners)) {
      assert.match(a as string, ADDR);
      assert.notEqual(ADDR.exec(a as string)![1], '0');
    }
    const proxyUrl = `http://${gw.ready.listeners.proxy}`;
    const r = await client(proxyUrl, 'sk-tollgate-demo').chat.completions.create({
      model: 'mock-gpt',
      messages: [{ role: 'user', content: 'hello' }],
    });
    assert.equal(r.model, 'mock-gpt');
    assert.ok(r.choices[0].message.content && r.choices[0].message.content.length > 0);
    // The demo's wildcard alias answers too; a wrong key does not.
    const w = await client(proxyUrl, 'sk-tollgate-demo').chat.completions.create({
      model: 'mock/anything',
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(w.model, 'mock/anything');
    await assert.rejects(
      client(proxyUrl, 'sk-not-the-demo-key').chat.completions.create({ model: 'mock-gpt', messages: [{ role: 'user', content: 'x' }] }),
      (e: unknown) => e instanceof OpenAI.APIError && e.status === 401,
    );

    assert.equal(await gw.stop(), 0);
    assert.equal(gw.stdout(), JSON.stringify(gw.ready) + '\n', 'stdout must hold the ready line and nothing else');
    const logs = logLines(gw.stderr());
    assert.ok(
      logs.some((l) => /demo resources/.test(String(l.msg))),
      'running on the demo resources is logged as a warning',
    );
  });

  test("npm start's launcher serves, and has written the compile cache by the time it is ready", async (t) => {
    // The command line of `npm start`: its variables, node, its flags, the launcher, `start`.
    const start: string = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')).scripts.start;
    const words = start.split(/\s+/);
    const vars: Record<string, string> = {};
    while (/^[A-Z_]+=/.test(words[0])) {
      const [name, value] = words.shift()!.split('=');
      vars[name] = value;
    }
    if (words[0] === 'exec') words.shift();
    assert.equal(words[0], 'node');
    assert.deepEqual(words.slice(-2), ['bin/tollgate.js', 'start']);
    const cache = fs.mkdtempSync(os.tmpdir() + '/tollgate-ccache-');
    t.after(() => fs.rmSync(cache, { recursive: true, force: true }));
    const gw = await spawnRaw(
      ['start'],
      { ...vars, TOLLGATE_PROXY__ADDR: '127.0.0.1:0', TOLLGATE_OBSERVABILITY__METRICS__PROMETHEUS__ENABLED: 'false', NODE_COMPILE_CACHE: cache },
      cwd,
      [...words.slice(1, -2), path.join(repoRoot, 'bin', 'tollgate.js')],
    );
    t.after(() => gw.stop());
    const r = await client(`http://${gw.ready.listeners.proxy}`, 'sk-tollgate-demo').chat.completions.create({
      model: 'mock-gpt',
      messages: [{ role: 'user', content: 'hello' }],
    });
    assert.equal(r.model, 'mock-gpt');
    // Written at ready, not at exit: the gateway is still running here.
    const cached = fs.readdirSync(cache, { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
    assert.ok(cached.length >= 50, `compile cache holds the loaded modules (found ${cached.length} files)`);
    assert.equal(await gw.stop(), 0);
  });

  test("a SIGTERM to npm start's shell reaches the gateway, which drains and exits 0 (exec: no orphan left serving)", async (t) => {
    const start: string = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')).scripts.start;
    // As npm runs a script: `sh -c <script>` in the package directory, this Node first on PATH.
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? ''}`,
      TOLLGATE_PROXY__ADDR: '127.0.0.1:0',
      TOLLGATE_OBSERVABILITY__METRICS__PROMETHEUS__ENABLED: 'false',
    };
    delete env.NODE_TEST_CONTEXT;
    const sh = spawn('sh', ['-c', start], { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let gatewayPid: number | undefined;
    t.after(() => {
      // Whatever happened, nothing is left running.
      for (const pid of [sh.pid, gatewayPid]) {
        try {
          if (pid !== undefined) process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    });
    let stderr = '';
    sh.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    let out = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ready line\n${stderr}`)), 30_000);
      sh.stdout!.setEncoding('utf8').on('data', (c: string) => {
        out += c;
        const line = out.split('\n').find((l) => l.includes('"event":"ready"'));
        if (line === undefined) return;
        gatewayPid = JSON.parse(line).pid;
        clearTimeout(timer);
        resolve();
      });
    });
    assert.equal(gatewayPid, sh.pid, 'the gateway is the process npm started (the shell exec-ed it)');
    const exited = once(sh, 'close');
    sh.kill('SIGTERM');
    const [code, signal] = (await Promise.race([exited, new Promise((r) => setTimeout(() => r(['timeout']), 15_000))])) as [number | string, string | null];
    assert.deepEqual([code, signal], [0, null], stderr);
    assert.match(stderr, /drain complete/);
  });

  test('the launcher runs as a command through its shebang, with the variables and flags of its first line', async () => {
    const launcher = path.join(repoRoot, 'bin', 'tollgate.js');
    // Its shebang runs `node` from PATH: put this Node first.
    const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? ''}` };
    delete env.NODE_TEST_CONTEXT;
    delete env.MALLOC_ARENA_MAX;
    const { stdout, code } = await new Promise<{ stdout: string; code: number | null }>((resolve) => {
      const p = spawn(launcher, ['--help'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      p.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
      p.on('close', (c) => resolve({ stdout: out, code: c }));
    });
    assert.equal(code, 0);
    assert.match(stdout, /^Usage:/m);

    // `env -S` replaces itself with node: the started process is the gateway, with the settings.
    const gw = spawn(launcher, ['start'], {
      env: { ...env, TOLLGATE_PROXY__ADDR: '127.0.0.1:0', TOLLGATE_OBSERVABILITY__METRICS__PROMETHEUS__ENABLED: 'false' },
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    try {
      await once(gw.stdout!, 'data');
      const environ = fs.readFileSync(`/proc/${gw.pid}/environ`, 'utf8').split('\0');
      assert.ok(environ.includes('MALLOC_ARENA_MAX=2'), 'malloc arenas bounded');
      const cmdline = fs.readFileSync(`/proc/${gw.pid}/cmdline`, 'utf8').split('\0');
      assert.ok(cmdline.includes('--max-semi-space-size=8'), `young generation bounded: ${cmdline.join(' ')}`);
    } finally {
      gw.kill('SIGTERM');
      await once(gw, 'close');
    }
  });

  test('TOLLGATE_CONFIG names the config file; TOLLGATE_<SECTION>__<KEY> overrides it', async (t) => {
    const dir = fs.mkdtempSync(os.tmpdir() + '/tollgate-envcfg-');
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
    // The file's resources_file is relative: it resolves against the config file's directory.
    fs.writeFileSync(path.join(dir, 'resources.yaml'), YAML.stringify(RESOURCES));
    const configPath = path.join(dir, 'config.yaml');
    fs.writeFileSync(
      configPath,
      YAML.stringify({
        resources_file: 'resources.yaml',
        proxy: { addr: '127.0.0.1:0' },
        observability: { metrics: { prometheus: { addr: '127.0.0.1:0' } } },
      }),
    );
    const port = await freePort();
    const gw = await spawnRaw(
      ['start'],
      {
        TOLLGATE_CONFIG: configPath,
        TOLLGATE_PROXY__ADDR: `127.0.0.1:${port}`,
        TOLLGATE_OBSERVABILITY__METRICS__PROMETHEUS__ENABLED: 'false',
      },
      cwd,
    );
    t.after(() => gw.stop());
    // The variables win over the file: the proxy binds the variable's port, metrics is off.
    assert.deepEqual(gw.ready.listeners, { proxy: `127.0.0.1:${port}` });
    // The file was read: its resources (model "demo", the caller key) serve, not the demo set.
    const proxyUrl = `http://127.0.0.1:${port}`;
    const r = await client(proxyUrl, CALLER_KEY).chat.completions.create({ model: 'demo', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(r.model, 'demo');
    await assert.rejects(
      client(proxyUrl, 'sk-tollgate-demo').chat.completions.create({ model: 'mock-gpt', messages: [{ role: 'user', content: 'x' }] }),
      (e: unknown) => e instanceof OpenAI.APIError && e.status === 401,
    );
  });

  test('--config wins over TOLLGATE_CONFIG', async (t) => {
    const gw = await startGateway({
      config: { proxy: { addr: '127.0.0.1:0' }, observability: { metrics: { prometheus: { enabled: false } } } },
      resources: RESOURCES,
      env: { TOLLGATE_CONFIG: path.join(cwd, 'does-not-exist.yaml') },
    });
    t.after(() => gw.stop());
    assert.equal(gw.metricsUrl, undefined);
    const res = await fetch(`${gw.proxyUrl}/readyz`);
    assert.equal(res.status, 200);
    await res.arrayBuffer();
  });
});

test('a closed stdout (nobody reads the ready line) does not kill the gateway', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const config = path.join(dir, 'config.yaml');
  fs.writeFileSync(config, YAML.stringify({ proxy: { addr: '127.0.0.1:0' }, observability: { metrics: { prometheus: { enabled: false } } } }));
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TOLLGATE_') && k !== 'NODE_TEST_CONTEXT') env[k] = v;
  const proc = spawn(process.execPath, [mainTs, 'start', '--config', config], { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = once(proc, 'exit');
  t.after(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });
  // The reading end goes away before the gateway writes its ready line.
  proc.stdout!.destroy();
  let stderr = '';
  proc.stderr!.setEncoding('utf8');
  proc.stderr!.on('data', (c: string) => (stderr += c));
  const deadline = Date.now() + 15_000;
  while (!stderr.includes('"tollgate started"')) {
    if (proc.exitCode !== null) assert.fail(`the gateway exited (code ${proc.exitCode})\n${stderr}`);
    if (Date.now() > deadline) assert.fail(`no start line in 15 s\n${stderr}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  const started = JSON.parse(stderr.split('\n').find((l) => l.includes('"tollgate started"'))!);
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(proc.exitCode, null, `the gateway died after it started\n${stderr}`);
  const res = await fetch(`http://${started.listeners.proxy}/livez`);
  assert.equal(res.status, 200);
  proc.kill('SIGTERM');
  const [code] = await exited;
  assert.equal(code, 0, stderr);
});
