// E2E: the one-shot side of the CLI, run as a real process. Help and usage errors, `tollgate
// validate` (count, every error with its path, no plaintext key in any output), and boot
// failures of `tollgate start` (bad config keys, addresses, values, env overrides, resources)
// which must exit 1 before binding anything, with a message naming the key.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { repoRoot, runCli } from '../harness/spawn.ts';

let dir: string;

/** Write a file into this suite's temp dir; objects become YAML. Returns its absolute path. */
function write(name: string, doc: object | string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, typeof doc === 'string' ? doc : YAML.stringify(doc));
  return file;
}

/** Listeners on port 0, so a start that wrongly succeeds cannot collide with anything. */
const PORT0 = { proxy: { addr: '127.0.0.1:0' }, observability: { metrics: { prometheus: { addr: '127.0.0.1:0' } } } };

const GOOD_RESOURCES = {
  _format_version: '1',
  provider_keys: [{ display_name: 'm', provider: 'mock', api_key: 'x' }],
  models: [
    { display_name: 'demo', provider: 'mock', model_name: 'm1', provider_key: 'm' },
    { display_name: 'demo-2', provider: 'mock', model_name: 'm2', provider_key: 'm' },
  ],
  api_keys: [{ display_name: 'caller', key_hash: 'a'.repeat(64), allowed_models: ['*'] }],
};

/** The ready line on a line of its own (the start help quotes one indented, as an example). */
const READY_LINE = /^\{"event":"ready"/m;

const SECRET = 'sk-e2e-plaintext-0123456789';

/**
 * Four independent mistakes in four collections/entries, one of them a key_env whose
 * variable is unset, and one in an entry whose identity is built from the same variable
 * as a real key (so the plaintext would be printed unless it is masked).
 */
const BAD_RESOURCES = {
  _format_version: '1',
  provider_keys: [{ display_name: 'm', provider: 'mock', api_key: 'x', colour: 'blue' }],
  models: [
    { display_name: 'demo', provider: 'mock', model_name: 'm1', provider_key: 'm' },
    { display_name: 'fast', provider: 'mock', model_name: 'm1', provider_key: 'x' },
  ],
  api_keys: [
    { display_name: 'unset', key_env: 'TG_E2E_UNSET_KEY', allowed_models: ['*'] },
    { display_name: '${TG_E2E_SECRET}-named', key_env: 'TG_E2E_SECRET', allowed_models: ['*'], bogus: 1 },
  ],
};
const BAD_ENV = { TG_E2E_SECRET: SECRET };
const BAD_ERRORS = [
  'provider_keys[0] ("m").colour: unknown field',
  'models[1] ("fast").provider_key: unknown provider key "x"',
  'api_keys[0] ("unset").key_env: environment variable TG_E2E_UNSET_KEY is not set',
  'api_keys[1] ("[REDACTED]-named").bogus: unknown field',
];

/** The `  - <error>` lines of a load report. */
function reportedErrors(text: string): string[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith('  - '))
    .map((l) => l.slice(4));
}

before(() => {
  dir = fs.mkdtempSync(os.tmpdir() + '/tollgate-cli-');
});
after(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('help and usage errors', { concurrency: 3 }, () => {
  const helps: Array<[string[], RegExp[]]> = [
    [['--help'], [/Usage:/, /tollgate start/, /tollgate validate/]],
    [['start', '--help'], [/Usage: tollgate start/, /--config FILE/, /SIGHUP/, /SIGTERM/]],
    // -h wins over a config that could not even be read: help never starts anything.
    [['start', '-h', '--config', '/nonexistent/tollgate.yaml'], [/Usage: tollgate start/]],
    [['validate', '--help'], [/Usage: tollgate validate/, /--resources FILE/, /--config FILE/, /TOLLGATE_CONFIG/]],
    [['--version'], [new RegExp(`^tollgate ${JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')).version.replace(/\./g, '\\.')}\n$`)]],
    [['-v'], [/^tollgate \d+\.\d+\.\d+/]],
  ];
  for (const [args, patterns] of helps) {
    test(`tollgate ${args.join(' ')} prints its text on stdout and exits 0`, async () => {
      const r = await runCli(args);
      assert.equal(r.code, 0, r.stderr);
      for (const p of patterns) assert.match(r.stdout, p);
      assert.equal(r.stderr, '');
      assert.doesNotMatch(r.stdout, READY_LINE);
    });
  }

  const usage: Array<[string, string[], RegExp]> = [
    ['an unknown command', ['frobnicate'], /unknown command "frobnicate"/],
    ['an unknown flag on start', ['start', '--bogus'], /--bogus/],
    ['an unknown flag on validate', ['validate', '--bogus', '--resources', 'x.yaml'], /--bogus/],
    ['validate with nothing to check', ['validate'], /--config FILE or --resources FILE is required/],
  ];
  for (const [what, args, pattern] of usage) {
    test(`${what} exits 2 with usage on stderr`, async () => {
      const r = await runCli(args);
      assert.equal(r.code, 2, `stdout: ${r.stdout}\nstderr: ${r.stderr}`);
      assert.match(r.stderr, pattern);
      assert.match(r.stderr, /Usage/);
      assert.doesNotMatch(r.stdout, READY_LINE);
    });
  }
});

/** Run a command once, however many tests assert on its outcome. */
function memo<T>(fn: () => Promise<T>): () => Promise<T> {
  let p: Promise<T> | undefined;
  return () => (p ??= fn());
}

const badValidate = memo(() => runCli(['validate', '--resources', write('bad.yaml', BAD_RESOURCES)], BAD_ENV));
const badBoot = memo(() =>
  runCli(['start', '--config', write('bad.config.yaml', { ...PORT0, resources_file: path.join(dir, 'bad.yaml') })], BAD_ENV),
);

describe('tollgate validate', { concurrency: 3 }, () => {
  test('a good file prints "OK: <file> loaded N resource(s)" and exits 0', async () => {
    const file = write('good.yaml', GOOD_RESOURCES);
    const r = await runCli(['validate', '--resources', file]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `OK: ${file} loaded 4 resource(s)\n`);
    assert.equal(r.stderr, '');
  });

  test('the count follows the file (one resource), and -r is accepted', async () => {
    const file = write('one.yaml', { _format_version: '1', provider_keys: [{ display_name: 'm', provider: 'mock', api_key: 'x' }] });
    const r = await runCli(['validate', '-r', file]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `OK: ${file} loaded 1 resource(s)\n`);
  });

  test('key_env with its variable set loads, and the key plaintext is not printed', async () => {
    const file = write('key-env.yaml', {
      ...GOOD_RESOURCES,
      api_keys: [{ display_name: 'caller', key_env: 'TG_E2E_CALLER', allowed_models: ['*'] }],
    });
    const r = await runCli(['validate', '--resources', file], { TG_E2E_CALLER: SECRET });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `OK: ${file} loaded 4 resource(s)\n`);
    assert.ok(!r.stdout.includes(SECRET) && !r.stderr.includes(SECRET), 'the key plaintext was printed');
  });

  test('a file with several errors prints every error with its path and exits 1', async () => {
    const r = await badValidate();
    assert.equal(r.code, 1, `stdout: ${r.stdout}\nstderr: ${r.stderr}`);
    const out = r.stdout + r.stderr;
    assert.ok(out.includes(path.join(dir, 'bad.yaml')), 'the report names the file');
    assert.match(out, new RegExp(`${BAD_ERRORS.length} error\\(s\\)`));
    assert.deepEqual(reportedErrors(out).sort(), [...BAD_ERRORS].sort());
    assert.doesNotMatch(r.stdout, /^OK:/m);
  });

  test('an unset key_env variable is an error, and no key plaintext is ever printed', async () => {
    const r = await badValidate();
    assert.equal(r.code, 1);
    assert.match(r.stderr, /api_keys\[0\] \("unset"\)\.key_env: environment variable TG_E2E_UNSET_KEY is not set/);
    assert.ok(!r.stdout.includes(SECRET), 'stdout holds the key plaintext');
    assert.ok(!r.stderr.includes(SECRET), 'stderr holds the key plaintext');
  });

  test('a provider key whose ${VAR} credential holds a line break is reported, the credential never printed', async () => {
    const file = write('pk-crlf.yaml', { ...GOOD_RESOURCES, provider_keys: [{ display_name: 'm', provider: 'mock', api_key: '${TG_E2E_UP_KEY}' }] });
    const r = await runCli(['validate', '--resources', file], { TG_E2E_UP_KEY: `${SECRET}\r\nx-injected: 1` });
    assert.equal(r.code, 1, `stdout: ${r.stdout}\nstderr: ${r.stderr}`);
    assert.deepEqual(reportedErrors(r.stderr), ['provider_keys[0] ("m").api_key: must not contain control characters']);
    assert.ok(!r.stdout.includes(SECRET) && !r.stderr.includes(SECRET), 'the credential was printed');
  });

  test('a YAML syntax error fails with exit 1', async () => {
    const r = await runCli(['validate', '--resources', write('syntax.yaml', '_format_version: "1"\nmodels: [\n')]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /yaml: /);
    assert.equal(r.stdout, '');
  });

  test('validate and start use the same loader: a file rejected by validate fails boot with the same errors', async () => {
    const [v, s] = await Promise.all([badValidate(), badBoot()]);
    assert.equal(v.code, 1);
    assert.equal(s.code, 1, `start should refuse the file\nstdout: ${s.stdout}\nstderr: ${s.stderr}`);
    assert.doesNotMatch(s.stdout, READY_LINE);
    assert.deepEqual(reportedErrors(s.stderr).sort(), reportedErrors(v.stderr).sort());
  });
});

describe('tollgate validate --config', { concurrency: 3 }, () => {
  test('a good config and the resources file it names: an OK line for each, exit 0', async () => {
    const resources = write('cfg-good.resources.yaml', GOOD_RESOURCES);
    const config = write('cfg-good.config.yaml', { ...PORT0, resources_file: 'cfg-good.resources.yaml' });
    const r = await runCli(['validate', '--config', config]);
    assert.equal(r.code, 0, r.stderr);
    // The relative resources_file resolves against the config's directory, as start reads it.
    assert.equal(r.stdout, `OK: ${config} is a valid configuration\nOK: ${resources} loaded 4 resource(s)\n`);
    assert.equal(r.stderr, '');
  });

  test('a config without resources_file says start serves the demo resources', async () => {
    const config = write('cfg-none.config.yaml', PORT0);
    const r = await runCli(['validate', '-c', config]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `OK: ${config} is a valid configuration (no resources_file: start serves the built-in demo resources)\n`);
  });

  test('a bad config reports every error as start does, exit 1, and its resources file is not read', async () => {
    const config = write('cfg-bad.config.yaml', { ...PORT0, proxy: { addr: 'foo' }, upstream: { timeout_ms: -5 }, resources_file: 'missing.yaml' });
    const env = { TOLLGATE_PROXY__ADRR: '127.0.0.1:0' };
    const [v, s] = await Promise.all([runCli(['validate', '--config', config], env), runCli(['start', '--config', config], env)]);
    assert.equal(v.code, 1, v.stderr);
    assert.equal(v.stdout, '');
    assert.match(v.stderr, /^tollgate: invalid configuration:\n/);
    assert.match(v.stderr, /proxy\.addr: invalid address "foo"/);
    assert.match(v.stderr, /upstream\.timeout_ms: must be an integer >= 0/);
    assert.match(v.stderr, /TOLLGATE_PROXY__ADRR: unknown key "proxy\.adrr"/);
    assert.doesNotMatch(v.stderr, /missing\.yaml/);
    assert.equal(s.code, 1);
    assert.equal(v.stderr, s.stderr, 'validate and start report a bad config alike');
  });

  test('a good config naming a bad resources file: the config is OK, every error of the file is listed, exit 1', async () => {
    const config = write('cfg-badres.config.yaml', { ...PORT0, resources_file: path.join(dir, 'bad.yaml') });
    const [r, v] = await Promise.all([runCli(['validate', '--config', config], BAD_ENV), badValidate()]);
    assert.equal(r.code, 1, r.stdout);
    assert.equal(r.stdout, `OK: ${config} is a valid configuration\n`);
    assert.deepEqual(reportedErrors(r.stderr).sort(), reportedErrors(v.stderr).sort());
    assert.ok(!r.stdout.includes(SECRET) && !r.stderr.includes(SECRET), 'the key plaintext was printed');
  });

  test('--resources given with --config is checked in place of the resources_file of the config', async () => {
    const resources = write('cfg-instead.resources.yaml', GOOD_RESOURCES);
    const config = write('cfg-instead.config.yaml', { ...PORT0, resources_file: '/nonexistent/resources.yaml' });
    const r = await runCli(['validate', '--config', config, '--resources', resources]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `OK: ${config} is a valid configuration\nOK: ${resources} loaded 4 resource(s)\n`);
  });

  test('with neither flag the config named by TOLLGATE_CONFIG is checked', async () => {
    const config = write('cfg-env.config.yaml', { ...PORT0, upstream: { timeout_ms: -5 } });
    const r = await runCli(['validate'], { TOLLGATE_CONFIG: config });
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stderr, /upstream\.timeout_ms: must be an integer >= 0/);
  });
});

describe('start: boot failures exit 1 and name the key', { concurrency: 3 }, () => {
  /** Run `start` to completion; it must fail before printing a ready line. */
  async function bootFails(config: object | string | undefined, env: Record<string, string> = {}) {
    const args = ['start'];
    if (config !== undefined) args.push('--config', write(`cfg-${Math.random().toString(36).slice(2)}.yaml`, config));
    const r = await runCli(args, env);
    assert.equal(r.code, 1, `expected exit 1\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
    assert.doesNotMatch(r.stdout, READY_LINE);
    return r;
  }

  test('an unknown key in the config file', async () => {
    const r = await bootFails({ ...PORT0, proxy: { addr: '127.0.0.1:0', adrr: '127.0.0.1:0' } });
    assert.match(r.stderr, /proxy\.adrr: unknown key/);
  });

  test('a bad address', async () => {
    const r = await bootFails({ ...PORT0, proxy: { addr: 'foo' } });
    assert.match(r.stderr, /proxy\.addr: invalid address "foo" \(expected host:port\)/);
  });

  test('a bad value', async () => {
    const r = await bootFails({ ...PORT0, upstream: { timeout_ms: -5 } });
    assert.match(r.stderr, /upstream\.timeout_ms: must be an integer >= 0/);
  });

  test('an unknown TOLLGATE_* variable', async () => {
    const r = await bootFails(PORT0, { TOLLGATE_PROXY__ADRR: '127.0.0.1:0' });
    assert.match(r.stderr, /TOLLGATE_PROXY__ADRR: unknown key "proxy\.adrr"/);
  });

  test('bad values from the environment name their variables, all reported at once', async () => {
    const r = await bootFails(PORT0, {
      TOLLGATE_PROXY__ADDR: 'http://localhost:3000',
      TOLLGATE_SHUTDOWN__MIN_DRAIN_SECS: '1.5',
      TOLLGATE_PROXY_ADDR: '127.0.0.1:0',
    });
    assert.match(r.stderr, /proxy\.addr: invalid address "http:\/\/localhost:3000" \(expected host:port.*\) \(from TOLLGATE_PROXY__ADDR\)/);
    assert.match(r.stderr, /shutdown\.min_drain_secs: .*\(from TOLLGATE_SHUTDOWN__MIN_DRAIN_SECS\)/);
    assert.match(r.stderr, /TOLLGATE_PROXY_ADDR: unknown key "proxy_addr" \(did you mean TOLLGATE_PROXY__ADDR\?\)/);
  });

  test('a config file that does not exist', async () => {
    const r = await runCli(['start', '--config', path.join(dir, 'nope.yaml')]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /nope\.yaml.*cannot read/);
  });

  test('two listeners on one port, refused before either binds', async () => {
    const r = await bootFails({ proxy: { addr: '127.0.0.1:3911' }, observability: { metrics: { prometheus: { addr: '127.0.0.1:3911' } } } });
    assert.match(r.stderr, /observability\.metrics\.prometheus\.addr: "127\.0\.0\.1:3911" takes the port of proxy\.addr "127\.0\.0\.1:3911"/);
    assert.doesNotMatch(r.stderr, /cannot bind/);
  });

  test('admin enabled without admin_keys', async () => {
    const r = await bootFails({ ...PORT0, admin: { enabled: true, addr: '127.0.0.1:0' } });
    assert.match(r.stderr, /admin\.admin_keys/);
  });

  test('a bad resources file lists every error', async () => {
    const r = await badBoot();
    assert.equal(r.code, 1, r.stderr);
    assert.doesNotMatch(r.stdout, READY_LINE);
    assert.ok(r.stderr.includes(path.join(dir, 'bad.yaml')), 'the report names the file');
    assert.deepEqual(reportedErrors(r.stderr).sort(), [...BAD_ERRORS].sort());
    assert.ok(!r.stdout.includes(SECRET) && !r.stderr.includes(SECRET), 'start printed the key plaintext');
  });

  test('a resources file that does not exist', async () => {
    const r = await bootFails({ ...PORT0, resources_file: path.join(dir, 'no-resources.yaml') });
    assert.match(r.stderr, /no-resources\.yaml/);
    assert.match(r.stderr, /cannot read/);
  });

  test('a listener address already in use', async () => {
    const blockers = [net.createServer(), net.createServer(), net.createServer()];
    const ports: number[] = [];
    try {
      for (const b of blockers) {
        await new Promise<void>((resolve) => b.listen(0, '127.0.0.1', resolve));
        ports.push((b.address() as net.AddressInfo).port);
      }
      const [port, port2, port3] = ports;
      const r = await bootFails({ ...PORT0, proxy: { addr: `127.0.0.1:${port}` } });
      assert.match(r.stderr, /cannot bind the proxy listener \(proxy\.addr\)/);
      assert.match(r.stderr, new RegExp(String(port)));
      // The metrics listener (on by default) clashing names its own key.
      const m = await bootFails({ ...PORT0, observability: { metrics: { prometheus: { enabled: true, addr: `127.0.0.1:${port}` } } } });
      assert.match(m.stderr, /cannot bind the metrics listener \(observability\.metrics\.prometheus\.addr\): .*EADDRINUSE/);
      assert.doesNotMatch(m.stderr, /proxy listener/);
      // Several addresses in use: one start names each, not only the first.
      const all = await bootFails({
        proxy: { addr: `127.0.0.1:${port}` },
        observability: { metrics: { prometheus: { addr: '127.0.0.1:0' } }, debug: { enabled: true, addr: `127.0.0.1:${port2}` } },
        admin: { enabled: true, admin_keys: ['k'], addr: `127.0.0.1:${port3}` },
      });
      assert.match(all.stderr, new RegExp(`cannot bind the proxy listener \\(proxy\\.addr\\): .*EADDRINUSE.*:${port}\\b`));
      assert.match(all.stderr, new RegExp(`cannot bind the debug listener \\(observability\\.debug\\.addr\\): .*EADDRINUSE.*:${port2}\\b`));
      assert.match(all.stderr, new RegExp(`cannot bind the admin listener \\(admin\\.addr\\): .*EADDRINUSE.*:${port3}\\b`));
      assert.doesNotMatch(all.stderr, /metrics listener/);
    } finally {
      for (const b of blockers) if (b.listening) await new Promise((resolve) => b.close(resolve));
    }
  });
});
