import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadConfig, parseAddr, type ConfigResult } from './load.ts';
import type { GatewayConfig } from './schema.ts';

const tmp = mkdtempSync(join(tmpdir(), 'tollgate-config-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

let fileCount = 0;
/** Write a config file in its own directory and return its absolute path. */
function writeConfig(text: string, name = 'config.yaml'): string {
  const dir = join(tmp, `case-${++fileCount}`);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

function ok(result: ConfigResult): GatewayConfig {
  if (!result.ok) assert.fail(`expected ok, got errors:\n${result.errors.join('\n')}`);
  return result.config;
}

function errs(result: ConfigResult): string[] {
  if (result.ok) assert.fail('expected errors, got ok');
  return result.errors;
}

const fromYaml = (text: string, env: Record<string, string | undefined> = {}) =>
  loadConfig({ file: writeConfig(text), env });
const fromEnv = (env: Record<string, string | undefined>) => loadConfig({ env });

/** Errors of a file, asserting that exactly `expected` are reported (order-insensitive). */
function assertErrors(result: ConfigResult, expected: string[]): void {
  assert.deepEqual([...errs(result)].sort(), [...expected].sort());
}

const DEFAULTS: GatewayConfig = {
  proxy: {
    addr: '127.0.0.1:3000',
    request_body_limit_bytes: 33554432,
    request_timeout_ms: 300000,
    max_in_flight_requests: 0,
    send_timeout_ms: 300000,
    request_id: { accept_headers: ['x-tollgate-request-id'] },
    real_ip: { header: 'x-forwarded-for', trusted_proxies: [], recursive: false },
    url_rewrites: [],
  },
  admin: { enabled: false, addr: '127.0.0.1:9180', admin_keys: [] },
  observability: {
    log_level: 'info',
    access_log: true,
    metrics: {
      prometheus: { enabled: true, path: '/metrics', addr: '127.0.0.1:9090' },
      labels: { api_key_name: false, team_name: false, provider_key_name: false, policy_name: false, user_name: false },
      buckets: {
        request_duration: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600],
        request_e2e_latency: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 420, 600],
        request_ttft: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300],
        guardrail_latency: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      },
    },
    usage_event: { request_headers: [], log: true },
    debug: { enabled: false, addr: '127.0.0.1:9091', path: '/debug/pprof/heap' },
  },
  upstream: { timeout_ms: 6000000, stream_timeout_ms: 0, connect_timeout_ms: 5000, retries: 2 },
  shutdown: { min_drain_secs: 0, drain_timeout_secs: 30 },
  ratelimit: {
    backend: 'memory',
    failure_mode: 'fail_open',
    concurrency_ttl_secs: 300,
    lease_renew_interval_ms: 10000,
    redis: {
      mode: 'single',
      url: 'redis://127.0.0.1:6379',
      nodes: [],
      sentinels: [],
      database: 0,
      tls: false,
      key_prefix: 'tollgate:{rl}:',
      command_timeout_ms: 1000,
    },
  },
};

describe('defaults', () => {
  test('no file and no env gives every default and no resources_file', () => {
    const config = ok(fromEnv({}));
    assert.deepEqual(config, DEFAULTS);
    assert.equal('resources_file' in config, false);
  });

  test('each load returns fresh objects (defaults are not shared)', () => {
    const a = ok(fromEnv({}));
    a.proxy.request_id.accept_headers.push('x-mutated');
    a.proxy.real_ip.trusted_proxies.push('10.0.0.0/8');
    assert.deepEqual(ok(fromEnv({})), DEFAULTS);
  });

  test('an empty or comment-only file gives the defaults', () => {
    assert.deepEqual(ok(fromYaml('')), DEFAULTS);
    assert.deepEqual(ok(fromYaml('# nothing here\n\n# still nothing\n')), DEFAULTS);
  });

  test('a section whose keys are all commented out (null) gives its defaults', () => {
    const config = ok(fromYaml('proxy:\n  # addr: 0.0.0.0:3000\nobservability:\n  metrics:\n    prometheus:\n'));
    assert.deepEqual(config, DEFAULTS);
  });

  test('a partial section keeps the defaults of the keys it omits', () => {
    const config = ok(fromYaml('proxy:\n  addr: 0.0.0.0:8080\nobservability:\n  metrics:\n    prometheus:\n      enabled: false\n'));
    assert.equal(config.proxy.addr, '0.0.0.0:8080');
    assert.equal(config.proxy.request_body_limit_bytes, 33554432);
    assert.deepEqual(config.proxy.real_ip, DEFAULTS.proxy.real_ip);
    assert.deepEqual(config.observability.metrics.prometheus, { enabled: false, path: '/metrics', addr: '127.0.0.1:9090' });
    assert.equal(config.observability.log_level, 'info');
  });

  test('without an observability block the process logs at info, access log on, no name labels', () => {
    const config = ok(fromYaml('proxy:\n  addr: 127.0.0.1:3000\n'));
    assert.deepEqual(config.observability, DEFAULTS.observability);
    assert.equal(config.observability.log_level, 'info');
    assert.equal(config.observability.access_log, true);
  });

  test('examples/config.yaml is valid and spells out exactly the defaults', () => {
    const example = resolve(import.meta.dirname, '../../examples/config.yaml');
    assert.deepEqual(ok(loadConfig({ file: example, env: {} })), DEFAULTS);
  });
});

describe('config file', () => {
  test('every key can be set from YAML', () => {
    const config = ok(
      fromYaml(`
resources_file: /etc/tollgate/resources.yaml
proxy:
  addr: "[::]:8443"
  request_body_limit_bytes: 0
  request_timeout_ms: 45000
  send_timeout_ms: 15000
  max_in_flight_requests: 5000
  request_id:
    accept_headers: [X-Request-Id, x-correlation-id]
  real_ip:
    header: X-Real-IP
    trusted_proxies: [10.0.0.0/8, "::1", 192.168.1.7]
    recursive: true
  url_rewrites:
    - {name: openai-prefix, match: "^/openai/v1/", rewrite: /v1/}
    - {match: "^/p/(?<provider>[a-z]+)/", rewrite: "/passthrough/$<provider>/"}
admin:
  enabled: true
  addr: localhost:0
  admin_keys: [k-one, k-two]
observability:
  log_level: debug
  access_log: false
  metrics:
    prometheus:
      enabled: false
      path: /internal/metrics
      addr: 0.0.0.0:9091
    labels: {api_key_name: true, team_name: true, provider_key_name: true, policy_name: true, user_name: true}
    buckets: {request_duration: [1, 2], request_e2e_latency: [0.5], request_ttft: [0.1, 0.2], guardrail_latency: [3]}
  usage_event:
    request_headers: [X-Team, x-tenant-id]
    file: ${join(tmp, 'usage.ndjson')}
    log: false
  debug:
    enabled: true
    addr: 127.0.0.1:0
    path: /heap
upstream:
  timeout_ms: 0
  stream_timeout_ms: 120000
  connect_timeout_ms: 250
  retries: 4
shutdown:
  min_drain_secs: 5
  drain_timeout_secs: 0
ratelimit:
  backend: redis
  failure_mode: fail_closed
  concurrency_ttl_secs: 60
  lease_renew_interval_ms: 5000
  redis:
    mode: sentinel
    url: redis://10.0.0.5:6380
    nodes: [10.0.0.1:7000]
    sentinels: [10.0.0.2:26379, 10.0.0.3:26379]
    master_name: main
    username: gw
    password: secret
    database: 2
    tls: true
    key_prefix: "gw:{x}:"
    command_timeout_ms: 250
`),
    );
    assert.deepEqual(config, {
      resources_file: '/etc/tollgate/resources.yaml',
      proxy: {
        addr: '[::]:8443',
        request_body_limit_bytes: 0,
        request_timeout_ms: 45000,
        max_in_flight_requests: 5000,
        send_timeout_ms: 15000,
        request_id: { accept_headers: ['x-request-id', 'x-correlation-id'] },
        real_ip: { header: 'x-real-ip', trusted_proxies: ['10.0.0.0/8', '::1', '192.168.1.7'], recursive: true },
        url_rewrites: [
          { name: 'openai-prefix', match: '^/openai/v1/', rewrite: '/v1/' },
          { match: '^/p/(?<provider>[a-z]+)/', rewrite: '/passthrough/$<provider>/' },
        ],
      },
      admin: { enabled: true, addr: 'localhost:0', admin_keys: ['k-one', 'k-two'] },
      observability: {
        log_level: 'debug',
        access_log: false,
        metrics: {
          prometheus: { enabled: false, path: '/internal/metrics', addr: '0.0.0.0:9091' },
          labels: { api_key_name: true, team_name: true, provider_key_name: true, policy_name: true, user_name: true },
          buckets: { request_duration: [1, 2], request_e2e_latency: [0.5], request_ttft: [0.1, 0.2], guardrail_latency: [3] },
        },
        usage_event: { request_headers: ['X-Team', 'x-tenant-id'], file: join(tmp, 'usage.ndjson'), log: false },
        debug: { enabled: true, addr: '127.0.0.1:0', path: '/heap' },
      },
      upstream: { timeout_ms: 0, stream_timeout_ms: 120000, connect_timeout_ms: 250, retries: 4 },
      shutdown: { min_drain_secs: 5, drain_timeout_secs: 0 },
      ratelimit: {
        backend: 'redis',
        failure_mode: 'fail_closed',
        concurrency_ttl_secs: 60,
        lease_renew_interval_ms: 5000,
        redis: {
          mode: 'sentinel',
          url: 'redis://10.0.0.5:6380',
          nodes: ['10.0.0.1:7000'],
          sentinels: ['10.0.0.2:26379', '10.0.0.3:26379'],
          master_name: 'main',
          username: 'gw',
          password: 'secret',
          database: 2,
          tls: true,
          key_prefix: 'gw:{x}:',
          command_timeout_ms: 250,
        },
      },
    });
  });

  test('a JSON file (tab-indented) is read as YAML', () => {
    const file = writeConfig('{\n\t"proxy": {\n\t\t"addr": "0.0.0.0:3001"\n\t},\n\t"admin": {"enabled": false}\n}\n', 'config.json');
    assert.equal(ok(loadConfig({ file, env: {} })).proxy.addr, '0.0.0.0:3001');
  });

  test('a relative file path resolves against cwd', () => {
    const file = writeConfig('proxy:\n  addr: 0.0.0.0:3002\n');
    const config = ok(loadConfig({ file: 'config.yaml', cwd: resolve(file, '..'), env: {} }));
    assert.equal(config.proxy.addr, '0.0.0.0:3002');
  });

  test('a missing file fails naming the file', () => {
    const missing = join(tmp, 'does-not-exist.yaml');
    assertErrors(loadConfig({ file: missing, env: {} }), [`config file ${JSON.stringify(missing)}: cannot read: no such file`]);
  });

  test('a directory fails naming it', () => {
    assertErrors(loadConfig({ file: tmp, env: {} }), [`config file ${JSON.stringify(tmp)}: cannot read: is a directory`]);
  });

  test('a YAML syntax error names the file, line and column without quoting the source', () => {
    const file = writeConfig('admin:\n  admin_keys: [sk-very-secret\n  enabled: true\n');
    const errors = errs(loadConfig({ file, env: {} }));
    assert.ok(errors.length >= 1);
    for (const e of errors) {
      assert.match(e, new RegExp(`^config file ${JSON.stringify(file).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: YAML syntax error at line \\d+, column \\d+: `));
      assert.ok(!e.includes('sk-very-secret'), e);
    }
  });

  test('an unquoted secret that YAML reads as an alias or a block scalar header is never quoted back', () => {
    for (const text of ['admin: {admin_keys: [*Zq9Secret]}\n', 'admin:\n  admin_keys:\n    - |Zq9Secret\n']) {
      const errors = errs(fromYaml(text));
      assert.ok(errors.length >= 1, text);
      for (const e of errors) assert.ok(!e.includes('Zq9Secret'), e);
    }
  });

  test('an unresolved YAML tag is an error at its line and column, never the plain value it would leave', () => {
    const errors = errs(fromYaml('admin:\n  enabled: true\n  admin_keys: [!ENV ADMIN_KEY]\n'));
    assert.equal(errors.length, 1);
    assert.match(errors[0], /unsupported YAML tag at line 3, column 16/);
    assert.ok(!errors[0].includes('ADMIN_KEY'), errors[0]);
  });

  test('duplicate keys are a YAML error', () => {
    const errors = errs(fromYaml('proxy:\n  addr: 0.0.0.0:1\n  addr: 0.0.0.0:2\n'));
    assert.equal(errors.length, 1);
    assert.match(errors[0], /YAML syntax error at line 3, column 3: .*unique/i);
  });

  test('more than one YAML document is an error', () => {
    const errors = errs(fromYaml('proxy: {}\n---\nadmin: {}\n'));
    assert.deepEqual(errors.map((e) => e.replace(/^config file "[^"]+": /, '')), [
      'YAML syntax error at line 2, column 1: the file must hold a single YAML document',
    ]);
  });

  test('a top level that is not a mapping is an error', () => {
    for (const text of ['- a\n- b\n', 'just a string\n', '42\n']) {
      const file = writeConfig(text);
      assertErrors(loadConfig({ file, env: {} }), [`config file ${JSON.stringify(file)}: top level must be a mapping of config keys`]);
    }
  });
});

describe('unknown keys', () => {
  test('are reported with their full path, at every level', () => {
    assertErrors(
      fromYaml(`
foo: 1
proxy:
  adrr: 0.0.0.0:3000
  real_ip:
    trusted: []
  url_rewrites:
    - {match: ^/a, rewrite: /b, flags: i}
admin:
  keys: [a]
observability:
  metrics:
    prometheus:
      port: 9090
    otlp: {}
upstream:
  retry: 2
shutdown:
  grace: 1
`),
      [
        'foo: unknown key',
        'proxy.adrr: unknown key',
        'proxy.real_ip.trusted: unknown key',
        'proxy.url_rewrites[0].flags: unknown key',
        'admin.keys: unknown key',
        'observability.metrics.prometheus.port: unknown key',
        'observability.metrics.otlp: unknown key',
        'upstream.retry: unknown key',
        'shutdown.grace: unknown key',
      ],
    );
  });

  test('keys that only look like prototype members are unknown too', () => {
    assertErrors(fromYaml('__proto__: {a: 1}\nproxy:\n  constructor: x\n'), [
      '__proto__: unknown key',
      'proxy.constructor: unknown key',
    ]);
  });
});

describe('validation of each key', () => {
  test('resources_file must be a non-empty string', () => {
    assertErrors(fromYaml('resources_file: ""\n'), ['resources_file: must not be empty']);
    assertErrors(fromYaml('resources_file: 42\n'), ['resources_file: must be a string']);
    assertErrors(fromYaml('resources_file: null\n'), ['resources_file: must be a string']);
  });

  test('sections must be mappings', () => {
    assertErrors(fromYaml('proxy: 5\nadmin: [1]\nupstream: "x"\nshutdown: true\n'), [
      'proxy: must be a mapping',
      'admin: must be a mapping',
      'upstream: must be a mapping',
      'shutdown: must be a mapping',
    ]);
    assertErrors(fromYaml('observability:\n  metrics: []\n'), ['observability.metrics: must be a mapping']);
  });

  test('every address key is checked, with the key and the bad value named', () => {
    assertErrors(
      fromYaml(`
proxy: {addr: foo}
admin: {addr: "127.0.0.1:70000"}
observability: {metrics: {prometheus: {addr: "::1:9090"}}}
`),
      [
        'proxy.addr: invalid address "foo" (expected host:port)',
        'admin.addr: invalid address "127.0.0.1:70000" (port must be 0-65535)',
        'observability.metrics.prometheus.addr: invalid address "::1:9090" (IPv6 literals must be bracketed, e.g. [::1]:3000)',
      ],
    );
    assertErrors(fromYaml('proxy: {addr: 3000}\n'), ['proxy.addr: must be a string']);
  });

  test('address forms: IPv4, bracketed IPv6, hostname, port 0', () => {
    for (const addr of ['0.0.0.0:3000', '[::1]:3000', '[::]:0', 'localhost:3000', 'gateway.internal:1']) {
      assert.equal(ok(fromEnv({ TOLLGATE_PROXY__ADDR: addr })).proxy.addr, addr);
    }
  });

  test('proxy.request_body_limit_bytes is an integer >= 0 (0 = no cap)', () => {
    assert.equal(ok(fromYaml('proxy: {request_body_limit_bytes: 0}\n')).proxy.request_body_limit_bytes, 0);
    assert.equal(ok(fromYaml('proxy: {request_body_limit_bytes: 1048576}\n')).proxy.request_body_limit_bytes, 1048576);
    for (const bad of ['-1', '1.5', '"1024"', 'true']) {
      assertErrors(fromYaml(`proxy: {request_body_limit_bytes: ${bad}}\n`), [
        'proxy.request_body_limit_bytes: must be an integer >= 0',
      ]);
    }
  });

  test('proxy.request_id.accept_headers: lowercased, deduplicated, names checked', () => {
    const config = ok(fromYaml('proxy: {request_id: {accept_headers: [X-Request-ID, x-request-id, X-Trace]}}\n'));
    assert.deepEqual(config.proxy.request_id.accept_headers, ['x-request-id', 'x-trace']);
    assert.deepEqual(ok(fromYaml('proxy: {request_id: {accept_headers: []}}\n')).proxy.request_id.accept_headers, []);
    assertErrors(fromYaml('proxy: {request_id: {accept_headers: ["bad header", "", 7]}}\n'), [
      'proxy.request_id.accept_headers[0]: must be a valid HTTP header name',
      'proxy.request_id.accept_headers[1]: must be a valid HTTP header name',
      'proxy.request_id.accept_headers[2]: must be a string',
    ]);
    assertErrors(fromYaml('proxy: {request_id: {accept_headers: x-request-id}}\n'), [
      'proxy.request_id.accept_headers: must be a list',
    ]);
  });

  test('proxy.request_id.accept_headers rejects every credential header, in any case', () => {
    const creds = ['authorization', 'Proxy-Authorization', 'X-API-KEY', 'api-key', 'x-goog-api-key', 'Cookie', 'X-Amz-Security-Token'];
    const result = fromYaml(`proxy: {request_id: {accept_headers: [x-ok, ${creds.join(', ')}]}}\n`);
    assertErrors(
      result,
      creds.map(
        (h, i) =>
          `proxy.request_id.accept_headers[${i + 1}]: "${h.toLowerCase()}" carries credentials and cannot supply a request id`,
      ),
    );
  });

  test('observability.usage_event.request_headers refuses credential headers in any case, and bad names', () => {
    const creds = ['authorization', 'Proxy-Authorization', 'X-API-KEY', 'api-key', 'x-goog-api-key', 'Cookie', 'X-Amz-Security-Token'];
    assertErrors(fromYaml(`observability: {usage_event: {request_headers: [x-team, ${creds.join(', ')}, "bad name"]}}\n`), [
      ...creds.map((_, i) => `observability.usage_event.request_headers[${i + 1}]: carries credentials and cannot be captured in usage events`),
      `observability.usage_event.request_headers[${creds.length + 1}]: must be a valid HTTP header name`,
    ]);
    // Names that merely contain a credential name are fine.
    const config = ok(fromYaml('observability: {usage_event: {request_headers: [x-authorization-scope, x-cookie-id]}}\n'));
    assert.deepEqual(config.observability.usage_event.request_headers, ['x-authorization-scope', 'x-cookie-id']);
  });

  test('observability.metrics.buckets are non-empty lists of positive numbers', () => {
    assertErrors(fromYaml('observability: {metrics: {buckets: {request_ttft: [], request_e2e_latency: [0, 1]}}}\n'), [
      'observability.metrics.buckets.request_ttft: must NOT have fewer than 1 items',
      'observability.metrics.buckets.request_e2e_latency[0]: must be > 0',
    ]);
  });

  test('bucket order and the usage file are reported with every other error', () => {
    assertErrors(fromYaml('observability: {metrics: {buckets: {request_ttft: [1, 0.5]}}}\nupstream: {retries: 11}\n'), [
      'observability.metrics.buckets.request_ttft: must be strictly ascending (1 then 0.5)',
      'upstream.retries: must be an integer <= 10',
    ]);
    const missing = join(tmp, 'no-such-dir', 'usage.ndjson');
    assertErrors(
      fromEnv({ TOLLGATE_OBSERVABILITY__METRICS__BUCKETS__REQUEST_TTFT: '1,0.5', TOLLGATE_OBSERVABILITY__USAGE_EVENT__FILE: missing }),
      [
        'observability.metrics.buckets.request_ttft: must be strictly ascending (1 then 0.5) (from TOLLGATE_OBSERVABILITY__METRICS__BUCKETS__REQUEST_TTFT)',
        `observability.usage_event.file: cannot open ${JSON.stringify(missing)} for appending: ENOENT (from TOLLGATE_OBSERVABILITY__USAGE_EVENT__FILE)`,
      ],
    );
  });

  test('observability.debug.path must be a path; labels must be booleans', () => {
    assertErrors(fromYaml('observability: {debug: {path: heap}, metrics: {labels: {team_name: "yes", tenant: true}}}\n'), [
      'observability.debug.path: must be a path starting with / (no spaces, query or fragment)',
      'observability.metrics.labels.team_name: must be true or false',
      'observability.metrics.labels.tenant: unknown key',
    ]);
  });

  test('proxy.url_rewrites: each rule needs match and rewrite; a bad regex is named by its key path', () => {
    assertErrors(
      fromYaml(`
proxy:
  url_rewrites:
    - {name: ok, match: "^/a/(.*)$", rewrite: /b/$1}
    - {name: broken, match: "^/v1/(chat", rewrite: /x}
    - {match: "a{2,1}", rewrite: /y}
    - {rewrite: /z}
    - {match: "", rewrite: /z}
    - {match: ^/m}
    - {match: ^/n, rewrite: 7}
    - not-a-mapping
    - {name: "", match: ^/o, rewrite: /o}
`),
      [
        'proxy.url_rewrites[1].match: invalid regular expression: Unterminated group',
        'proxy.url_rewrites[2].match: invalid regular expression: numbers out of order in {} quantifier',
        'proxy.url_rewrites[3].match: required',
        'proxy.url_rewrites[4].match: must not be empty',
        'proxy.url_rewrites[5].rewrite: required',
        'proxy.url_rewrites[6].rewrite: must be a string',
        'proxy.url_rewrites[7]: must be a mapping',
        'proxy.url_rewrites[8].name: must not be empty',
      ],
    );
    assertErrors(fromYaml('proxy:\n  url_rewrites: {match: ^/a, rewrite: /b}\n'), ['proxy.url_rewrites: must be a list']);
  });

  test('proxy.url_rewrites: match is capped at 512 characters; an empty rewrite is allowed', () => {
    const long = `^/${'a'.repeat(511)}`;
    assertErrors(fromYaml(`proxy:\n  url_rewrites:\n    - {match: "${long}", rewrite: /x}\n`), [
      'proxy.url_rewrites[0].match: must be at most 512 characters',
    ]);
    const atCap = `^/${'a'.repeat(510)}`;
    const config = ok(fromYaml(`proxy:\n  url_rewrites:\n    - {match: "${atCap}", rewrite: ""}\n`));
    assert.deepEqual(config.proxy.url_rewrites, [{ match: atCap, rewrite: '' }]);
  });

  test('proxy.url_rewrites can come from the environment as a JSON array; errors name the variable', () => {
    const config = ok(fromEnv({ TOLLGATE_PROXY__URL_REWRITES: '[{"match":"^/openai/v1/","rewrite":"/v1/"}]' }));
    assert.deepEqual(config.proxy.url_rewrites, [{ match: '^/openai/v1/', rewrite: '/v1/' }]);
    assertErrors(fromEnv({ TOLLGATE_PROXY__URL_REWRITES: '[{"match":"(","rewrite":"/v1/"}]' }), [
      'proxy.url_rewrites[0].match: invalid regular expression: Unterminated group (from TOLLGATE_PROXY__URL_REWRITES)',
    ]);
  });

  test('proxy.real_ip.header is a header name, lowercased', () => {
    assert.equal(ok(fromYaml('proxy: {real_ip: {header: X-Real-IP}}\n')).proxy.real_ip.header, 'x-real-ip');
    assertErrors(fromYaml('proxy: {real_ip: {header: "x real ip"}}\n'), [
      'proxy.real_ip.header: must be a valid HTTP header name',
    ]);
  });

  test('proxy.real_ip.trusted_proxies holds IPs or CIDRs; each bad entry is named', () => {
    const good = ['10.0.0.0/8', '172.16.0.1', '::1', 'fd00::/8', '0.0.0.0/0'];
    assert.deepEqual(ok(fromYaml(`proxy: {real_ip: {trusted_proxies: ${JSON.stringify(good)}}}\n`)).proxy.real_ip.trusted_proxies, good);
    assertErrors(fromYaml('proxy: {real_ip: {trusted_proxies: [10.0.0.0/8, 10.0.0.0/33, localhost, "1.2.3"]}}\n'), [
      'proxy.real_ip.trusted_proxies[1]: invalid IP address or CIDR "10.0.0.0/33"',
      'proxy.real_ip.trusted_proxies[2]: invalid IP address or CIDR "localhost"',
      'proxy.real_ip.trusted_proxies[3]: invalid IP address or CIDR "1.2.3"',
    ]);
  });

  test('booleans must be true or false', () => {
    assertErrors(
      fromYaml(`
proxy: {real_ip: {recursive: "yes"}}
admin: {enabled: 1}
observability: {access_log: "true", metrics: {prometheus: {enabled: null}}}
`),
      [
        'proxy.real_ip.recursive: must be true or false',
        'admin.enabled: must be true or false',
        'observability.access_log: must be true or false',
        'observability.metrics.prometheus.enabled: must be true or false',
      ],
    );
  });

  test('admin.enabled requires at least one admin key', () => {
    assertErrors(fromYaml('admin: {enabled: true}\n'), [
      'admin.admin_keys: must list at least one key when admin.enabled is true',
    ]);
    assertErrors(fromYaml('admin: {enabled: true, admin_keys: []}\n'), [
      'admin.admin_keys: must list at least one key when admin.enabled is true',
    ]);
    assert.equal(ok(fromYaml('admin: {enabled: false}\n')).admin.enabled, false);
    assert.deepEqual(ok(fromYaml('admin: {enabled: true, admin_keys: [k1]}\n')).admin.admin_keys, ['k1']);
  });

  test('two enabled listeners on one port are refused, naming both keys; port 0, disabled listeners and distinct hosts are not', () => {
    assertErrors(fromYaml('proxy: {addr: "127.0.0.1:3911"}\nobservability: {metrics: {prometheus: {addr: "127.0.0.1:3911"}}}\n'), [
      'observability.metrics.prometheus.addr: "127.0.0.1:3911" takes the port of proxy.addr "127.0.0.1:3911": each listener needs its own',
    ]);
    // A wildcard overlaps every address of its family; `::` is dual-stack, so every address.
    assertErrors(fromYaml('proxy: {addr: "0.0.0.0:3911"}\nadmin: {enabled: true, admin_keys: [k], addr: "127.0.0.1:3911"}\n'), [
      'admin.addr: "127.0.0.1:3911" takes the port of proxy.addr "0.0.0.0:3911": each listener needs its own',
    ]);
    assertErrors(fromYaml('proxy: {addr: "[::]:3911"}\nobservability: {debug: {enabled: true, addr: "10.0.0.1:3911"}}\n'), [
      'observability.debug.addr: "10.0.0.1:3911" takes the port of proxy.addr "[::]:3911": each listener needs its own',
    ]);
    // The same IPv6 address written two ways, and a hostname against itself.
    assertErrors(fromYaml('proxy: {addr: "[0:0::1]:3911"}\nobservability: {metrics: {prometheus: {addr: "[::1]:3911"}}}\n'), [
      'observability.metrics.prometheus.addr: "[::1]:3911" takes the port of proxy.addr "[0:0::1]:3911": each listener needs its own',
    ]);
    assert.equal(errs(fromYaml('proxy: {addr: "Localhost:3911"}\nobservability: {metrics: {prometheus: {addr: "localhost:3911"}}}\n')).length, 1);
    assert.equal(errs(fromYaml('proxy: {addr: "[::ffff:127.0.0.1]:3911"}\nobservability: {metrics: {prometheus: {addr: "127.0.0.1:3911"}}}\n')).length, 1);
    assert.equal(errs(fromYaml('proxy: {addr: "[::]:3911"}\nobservability: {metrics: {prometheus: {addr: "localhost:3911"}}}\n')).length, 1);
    // A value from the environment names its variable.
    assertErrors(fromYaml('proxy: {addr: "127.0.0.1:3911"}\n', { TOLLGATE_OBSERVABILITY__METRICS__PROMETHEUS__ADDR: '127.0.0.1:3911' }), [
      'observability.metrics.prometheus.addr: "127.0.0.1:3911" takes the port of proxy.addr "127.0.0.1:3911": each listener needs its own (from TOLLGATE_OBSERVABILITY__METRICS__PROMETHEUS__ADDR)',
    ]);
    for (const fine of [
      'proxy: {addr: "127.0.0.1:0"}\nobservability: {metrics: {prometheus: {addr: "127.0.0.1:0"}}, debug: {enabled: true, addr: "127.0.0.1:0"}}\n',
      'proxy: {addr: "127.0.0.1:3911"}\nobservability: {metrics: {prometheus: {enabled: false, addr: "127.0.0.1:3911"}}}\n',
      'proxy: {addr: "127.0.0.1:3911"}\nobservability: {metrics: {prometheus: {addr: "127.0.0.2:3911"}}}\n',
      'proxy: {addr: "0.0.0.0:3911"}\nobservability: {metrics: {prometheus: {addr: "[::1]:3911"}}}\n',
      // What a hostname resolves to is known at bind time only.
      'proxy: {addr: "0.0.0.0:3911"}\nobservability: {metrics: {prometheus: {addr: "localhost:3911"}}}\n',
    ]) {
      ok(fromYaml(fine));
    }
  });

  test('admin.admin_keys entries must be non-empty strings, and keys are never echoed', () => {
    const errors = errs(fromYaml('admin: {enabled: true, admin_keys: ["", sk-top-secret, 5]}\n'));
    assert.deepEqual(errors.sort(), ['admin.admin_keys[0]: must not be empty', 'admin.admin_keys[2]: must be a string']);
    assert.ok(errors.every((e) => !e.includes('sk-top-secret')));
  });

  test('observability.log_level accepts exactly the pino levels', () => {
    for (const level of ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const) {
      assert.equal(ok(fromYaml(`observability: {log_level: ${level}}\n`)).observability.log_level, level);
    }
    assertErrors(fromYaml('observability: {log_level: verbose}\n'), [
      'observability.log_level: must be one of trace, debug, info, warn, error, fatal, silent (got "verbose")',
    ]);
    assertErrors(fromYaml('observability: {log_level: INFO}\n'), [
      'observability.log_level: must be one of trace, debug, info, warn, error, fatal, silent (got "INFO")',
    ]);
  });

  test('observability.metrics.prometheus.path must be a path starting with /', () => {
    assert.equal(ok(fromYaml('observability: {metrics: {prometheus: {path: /m}}}\n')).observability.metrics.prometheus.path, '/m');
    for (const bad of ['metrics', '""', '"/a b"', '"/metrics?x=1"']) {
      assertErrors(fromYaml(`observability: {metrics: {prometheus: {path: ${bad}}}}\n`), [
        'observability.metrics.prometheus.path: must be a path starting with / (no spaces, query or fragment)',
      ]);
    }
  });

  test('upstream timeouts are integers >= 0 within the timer range', () => {
    for (const key of ['timeout_ms', 'stream_timeout_ms', 'connect_timeout_ms']) {
      assert.equal((ok(fromYaml(`upstream: {${key}: 0}\n`)).upstream as Record<string, number>)[key], 0);
      assert.equal((ok(fromYaml(`upstream: {${key}: 2147483647}\n`)).upstream as Record<string, number>)[key], 2147483647);
      for (const bad of ['-1', '0.5', '"100"']) {
        assertErrors(fromYaml(`upstream: {${key}: ${bad}}\n`), [`upstream.${key}: must be an integer >= 0`]);
      }
      assertErrors(fromYaml(`upstream: {${key}: 2147483648}\n`), [`upstream.${key}: must be an integer <= 2147483647`]);
    }
  });

  test('shutdown durations are integers >= 0', () => {
    for (const key of ['min_drain_secs', 'drain_timeout_secs']) {
      assert.equal((ok(fromYaml(`shutdown: {${key}: 0}\n`)).shutdown as Record<string, number>)[key], 0);
      for (const bad of ['-5', '1.5', 'soon']) {
        assertErrors(fromYaml(`shutdown: {${key}: ${bad}}\n`), [`shutdown.${key}: must be an integer >= 0`]);
      }
      assertErrors(fromYaml(`shutdown: {${key}: 2147484}\n`), [`shutdown.${key}: must be an integer <= 2147483`]);
    }
  });

  test('ratelimit: enums, bounds, redis addresses, env overrides', () => {
    assertErrors(fromYaml('ratelimit: {backend: etcd}\n'), ['ratelimit.backend: must be one of memory, redis (got "etcd")']);
    assertErrors(fromYaml('ratelimit: {failure_mode: maybe}\n'), ['ratelimit.failure_mode: must be one of fail_open, fail_closed (got "maybe")']);
    assertErrors(fromYaml('ratelimit: {concurrency_ttl_secs: 0}\n'), ['ratelimit.concurrency_ttl_secs: must be an integer >= 1']);
    assertErrors(fromYaml('ratelimit: {redis: {nodes: [nohost]}}\n'), ['ratelimit.redis.nodes[0]: invalid address "nohost" (expected host:port)']);
    assertErrors(fromYaml('ratelimit: {redis: {cluster: true}}\n'), ['ratelimit.redis.cluster: unknown key']);
    // Credentials in a bad URL or address are never echoed.
    const urlMessage = 'ratelimit.redis.url: must be a redis:// or rediss:// URL: host, optional port, optional /db (0-15); percent-encode "/", "?", "#" and "@" in a password';
    assertErrors(fromYaml('ratelimit: {redis: {url: "redis://:Ab3/kQ9SECRET@127.0.0.1:6379"}}\n'), [urlMessage]);
    assertErrors(fromYaml('ratelimit: {redis: {url: "redis://user:SECRETPASS@[::1"}}\n'), [urlMessage]);
    assertErrors(fromYaml('ratelimit: {redis: {url: "http://127.0.0.1:6379"}}\n'), [urlMessage]);
    assert.equal(ok(fromYaml('ratelimit: {redis: {url: "rediss://user:p%2Fw@cache.internal:6380/2"}}\n')).ratelimit.redis.url, 'rediss://user:p%2Fw@cache.internal:6380/2');
    assertErrors(fromYaml('ratelimit: {redis: {nodes: ["redis://:NODEPASS@10.0.0.1:7000", ":NODEPASS2@10.0.0.2:7000"]}}\n'), [
      'ratelimit.redis.nodes[0]: invalid address "…@10.0.0.1:7000" (expected host:port, not a URL)',
      'ratelimit.redis.nodes[1]: invalid address "…@10.0.0.2:7000" (invalid host)',
    ]);
    const config = ok(fromEnv({ TOLLGATE_RATELIMIT__BACKEND: 'redis', TOLLGATE_RATELIMIT__REDIS__URL: 'redis://10.0.0.9:6379' }));
    assert.equal(config.ratelimit.backend, 'redis');
    assert.equal(config.ratelimit.redis.url, 'redis://10.0.0.9:6379');
  });
});

describe('environment overrides', () => {
  test('errors of keys, or rules across keys, that a variable set name it', () => {
    assert.deepEqual(errs(fromEnv({ TOLLGATE_PROXY__URL_REWRITES: '[{"match":"^/a","rewrite":"/b","bogus":1}]' })), [
      'proxy.url_rewrites[0].bogus: unknown key (from TOLLGATE_PROXY__URL_REWRITES)',
    ]);
    assert.deepEqual(errs(fromEnv({ TOLLGATE_ADMIN__ENABLED: 'true', TOLLGATE_ADMIN__ADMIN_KEYS: '' })), [
      'admin.admin_keys: must list at least one key when admin.enabled is true (from TOLLGATE_ADMIN__ADMIN_KEYS, TOLLGATE_ADMIN__ENABLED)',
    ]);
    assert.deepEqual(errs(fromEnv({ TOLLGATE_RATELIMIT__LEASE_RENEW_INTERVAL_MS: '400000' })), [
      'ratelimit.lease_renew_interval_ms: must be shorter than ratelimit.concurrency_ttl_secs (from TOLLGATE_RATELIMIT__LEASE_RENEW_INTERVAL_MS)',
    ]);
  });

  test('the documented examples apply, coerced by the key type', () => {
    const config = ok(
      fromEnv({
        TOLLGATE_PROXY__ADDR: '0.0.0.0:3000',
        TOLLGATE_OBSERVABILITY__METRICS__PROMETHEUS__ENABLED: 'false',
        TOLLGATE_RESOURCES_FILE: '/x.yaml',
        TOLLGATE_SHUTDOWN__MIN_DRAIN_SECS: '5',
      }),
    );
    assert.equal(config.proxy.addr, '0.0.0.0:3000');
    assert.equal(config.observability.metrics.prometheus.enabled, false);
    assert.equal(config.resources_file, '/x.yaml');
    assert.equal(config.shutdown.min_drain_secs, 5);
  });

  test('booleans: true/false in any case, surrounding spaces ignored', () => {
    assert.equal(ok(fromEnv({ TOLLGATE_PROXY__REAL_IP__RECURSIVE: 'TRUE' })).proxy.real_ip.recursive, true);
    assert.equal(ok(fromEnv({ TOLLGATE_OBSERVABILITY__ACCESS_LOG: ' False ' })).observability.access_log, false);
    assertErrors(fromEnv({ TOLLGATE_OBSERVABILITY__ACCESS_LOG: 'yes' }), [
      'observability.access_log: must be true or false (from TOLLGATE_OBSERVABILITY__ACCESS_LOG)',
    ]);
    assertErrors(fromEnv({ TOLLGATE_ADMIN__ENABLED: '1' }), ['admin.enabled: must be true or false (from TOLLGATE_ADMIN__ENABLED)']);
  });

  test('integers: decimal digits only', () => {
    assert.equal(ok(fromEnv({ TOLLGATE_UPSTREAM__TIMEOUT_MS: ' 1500 ' })).upstream.timeout_ms, 1500);
    for (const bad of ['1.5', 'ten', '', '1e3', '0x10']) {
      assertErrors(fromEnv({ TOLLGATE_UPSTREAM__TIMEOUT_MS: bad }), [
        'upstream.timeout_ms: must be an integer >= 0 (from TOLLGATE_UPSTREAM__TIMEOUT_MS)',
      ]);
    }
    assertErrors(fromEnv({ TOLLGATE_UPSTREAM__TIMEOUT_MS: '-1' }), [
      'upstream.timeout_ms: must be an integer >= 0 (from TOLLGATE_UPSTREAM__TIMEOUT_MS)',
    ]);
  });

  test('arrays: comma-separated or a JSON array', () => {
    const comma = ok(fromEnv({ TOLLGATE_PROXY__REAL_IP__TRUSTED_PROXIES: '10.0.0.0/8, ::1 ,,192.168.0.1' }));
    assert.deepEqual(comma.proxy.real_ip.trusted_proxies, ['10.0.0.0/8', '::1', '192.168.0.1']);
    const json = ok(fromEnv({ TOLLGATE_ADMIN__ENABLED: 'true', TOLLGATE_ADMIN__ADMIN_KEYS: '["a,b", "c"]' }));
    assert.deepEqual(json.admin.admin_keys, ['a,b', 'c']);
    const empty = ok(fromEnv({ TOLLGATE_PROXY__REQUEST_ID__ACCEPT_HEADERS: '' }));
    assert.deepEqual(empty.proxy.request_id.accept_headers, []);
    const lowered = ok(fromEnv({ TOLLGATE_PROXY__REQUEST_ID__ACCEPT_HEADERS: 'X-Req-Id,X-Trace-Id' }));
    assert.deepEqual(lowered.proxy.request_id.accept_headers, ['x-req-id', 'x-trace-id']);
  });

  test('a bad JSON array is an error that does not echo the value', () => {
    const errors = errs(fromEnv({ TOLLGATE_ADMIN__ADMIN_KEYS: '["sk-secret-1", ' }));
    assert.deepEqual(errors, ['TOLLGATE_ADMIN__ADMIN_KEYS: admin.admin_keys: not a valid JSON array']);
    assertErrors(fromEnv({ TOLLGATE_PROXY__REAL_IP__TRUSTED_PROXIES: '[1, "10.0.0.1"]' }), [
      'proxy.real_ip.trusted_proxies[0]: must be a string (from TOLLGATE_PROXY__REAL_IP__TRUSTED_PROXIES)',
    ]);
  });

  test('env values that fail validation name the variable', () => {
    assertErrors(fromEnv({ TOLLGATE_PROXY__ADDR: 'foo', TOLLGATE_RESOURCES_FILE: '' }), [
      'proxy.addr: invalid address "foo" (expected host:port) (from TOLLGATE_PROXY__ADDR)',
      'resources_file: must not be empty (from TOLLGATE_RESOURCES_FILE)',
    ]);
    assertErrors(fromEnv({ TOLLGATE_PROXY__REQUEST_ID__ACCEPT_HEADERS: 'x-id,Authorization' }), [
      'proxy.request_id.accept_headers[1]: "authorization" carries credentials and cannot supply a request id (from TOLLGATE_PROXY__REQUEST_ID__ACCEPT_HEADERS)',
    ]);
  });

  test('env overrides win over the file; other file keys are kept', () => {
    const config = ok(
      fromYaml('proxy:\n  addr: 0.0.0.0:1111\n  request_body_limit_bytes: 10\nadmin:\n  admin_keys: [k]\n', {
        TOLLGATE_PROXY__ADDR: '0.0.0.0:2222',
        TOLLGATE_ADMIN__ENABLED: 'true',
      }),
    );
    assert.equal(config.proxy.addr, '0.0.0.0:2222');
    assert.equal(config.proxy.request_body_limit_bytes, 10);
    assert.equal(config.admin.enabled, true);
    assert.deepEqual(config.admin.admin_keys, ['k']);
  });

  test('env fills a section the file left null or absent', () => {
    const config = ok(fromYaml('proxy:\n', { TOLLGATE_PROXY__REAL_IP__RECURSIVE: 'true', TOLLGATE_UPSTREAM__CONNECT_TIMEOUT_MS: '1' }));
    assert.equal(config.proxy.real_ip.recursive, true);
    assert.equal(config.proxy.addr, '127.0.0.1:3000');
    assert.equal(config.upstream.connect_timeout_ms, 1);
  });

  test('env cannot hide a file section of the wrong type', () => {
    assertErrors(fromYaml('proxy: 5\n', { TOLLGATE_PROXY__ADDR: '0.0.0.0:1' }), ['proxy: must be a mapping']);
  });

  test('TOLLGATE_CONFIG, unset values and other variables are not overrides', () => {
    assert.deepEqual(
      ok(fromEnv({ TOLLGATE_CONFIG: '/etc/tollgate/config.yaml', TOLLGATE_PROXY__ADDR: undefined, PATH: '/bin', TOLLGATEX: '1', tollgate_proxy__addr: 'x' })),
      DEFAULTS,
    );
  });

  test('a variable naming no key fails, naming the variable and the key', () => {
    assertErrors(
      fromEnv({
        TOLLGATE_PROXY__ADRR: '0.0.0.0:3000',
        TOLLGATE_FOO: '1',
        TOLLGATE_PROXY__ADDR__PORT: '1',
        TOLLGATE_: 'x',
      }),
      [
        'TOLLGATE_PROXY__ADRR: unknown key "proxy.adrr"',
        'TOLLGATE_FOO: unknown key "foo"',
        'TOLLGATE_PROXY__ADDR__PORT: unknown key "proxy.addr.port"',
        'TOLLGATE_: unknown key ""',
      ],
    );
  });

  test('a single underscore where __ was meant gets a suggestion', () => {
    assertErrors(fromEnv({ TOLLGATE_PROXY_ADDR: '0.0.0.0:3000', TOLLGATE_SHUTDOWN_MIN_DRAIN_SECS: '1' }), [
      'TOLLGATE_PROXY_ADDR: unknown key "proxy_addr" (did you mean TOLLGATE_PROXY__ADDR?)',
      'TOLLGATE_SHUTDOWN_MIN_DRAIN_SECS: unknown key "shutdown_min_drain_secs" (did you mean TOLLGATE_SHUTDOWN__MIN_DRAIN_SECS?)',
    ]);
  });

  test('a variable naming a section (not a key) fails', () => {
    assertErrors(fromEnv({ TOLLGATE_OBSERVABILITY__METRICS: '{}' }), [
      'TOLLGATE_OBSERVABILITY__METRICS: "observability.metrics" is a section, not a key; set its keys as TOLLGATE_OBSERVABILITY__METRICS__<KEY>',
    ]);
  });
});

describe('all errors at once', () => {
  test('file, env and cross-key errors are reported together', () => {
    const result = fromYaml(
      `
proxy:
  adrr: x
  addr: nope
  request_body_limit_bytes: -3
admin:
  enabled: true
observability:
  log_level: loud
upstream:
  timeout_ms: 1.5
shutdown:
  drain_timeout_secs: -1
`,
      { TOLLGATE_PROXY__PORT: '1', TOLLGATE_ADMIN__ADDR: 'x:y' },
    );
    assertErrors(result, [
      'TOLLGATE_PROXY__PORT: unknown key "proxy.port"',
      'proxy.adrr: unknown key',
      'proxy.addr: invalid address "nope" (expected host:port)',
      'proxy.request_body_limit_bytes: must be an integer >= 0',
      'admin.addr: invalid address "x:y" (expected host:port) (from TOLLGATE_ADMIN__ADDR)',
      'admin.admin_keys: must list at least one key when admin.enabled is true',
      'observability.log_level: must be one of trace, debug, info, warn, error, fatal, silent (got "loud")',
      'upstream.timeout_ms: must be an integer >= 0',
      'shutdown.drain_timeout_secs: must be an integer >= 0',
    ]);
  });

  test('an unreadable file still reports the env errors', () => {
    assertErrors(loadConfig({ file: join(tmp, 'nope.yaml'), env: { TOLLGATE_NOPE: '1' } }), [
      `config file ${JSON.stringify(join(tmp, 'nope.yaml'))}: cannot read: no such file`,
      'TOLLGATE_NOPE: unknown key "nope"',
    ]);
  });
});

describe('resources_file resolution', () => {
  test('relative to the config file directory, not cwd', () => {
    const file = writeConfig('resources_file: res/resources.yaml\n');
    const config = ok(loadConfig({ file, cwd: '/somewhere/else', env: {} }));
    assert.equal(config.resources_file, join(resolve(file, '..'), 'res/resources.yaml'));
  });

  test('relative to the config file directory when the file path itself is relative', () => {
    const file = writeConfig('resources_file: ../shared/resources.yaml\n');
    const dir = resolve(file, '..');
    const config = ok(loadConfig({ file: join('..', dir.split('/').pop()!, 'config.yaml'), cwd: join(dir, '..', 'sub'), env: {} }));
    assert.equal(config.resources_file, resolve(dir, '../shared/resources.yaml'));
  });

  test('relative to cwd when there is no file', () => {
    const config = ok(loadConfig({ cwd: '/srv/tollgate', env: { TOLLGATE_RESOURCES_FILE: 'resources.yaml' } }));
    assert.equal(config.resources_file, '/srv/tollgate/resources.yaml');
  });

  test('relative to cwd when it comes from the environment, even with a file', () => {
    const file = writeConfig('resources_file: from-file.yaml\n');
    const config = ok(loadConfig({ file, cwd: '/srv/tollgate', env: { TOLLGATE_RESOURCES_FILE: './from-env.yaml' } }));
    assert.equal(config.resources_file, '/srv/tollgate/from-env.yaml');
  });

  test('observability.usage_event.file resolves the same way, and is checked where it resolves', () => {
    const file = writeConfig('observability: {usage_event: {file: logs/usage.ndjson}}\n');
    const dir = resolve(file, '..');
    const elsewhere = mkdtempSync(join(tmp, 'cwd-'));
    // No logs/ beside the config yet: the check looks there, not in cwd.
    mkdirSync(join(elsewhere, 'logs'));
    assertErrors(loadConfig({ file, cwd: elsewhere, env: {} }), [
      `observability.usage_event.file: cannot open ${JSON.stringify(join(dir, 'logs/usage.ndjson'))} for appending: ENOENT`,
    ]);
    mkdirSync(join(dir, 'logs'));
    assert.equal(ok(loadConfig({ file, cwd: elsewhere, env: {} })).observability.usage_event.file, join(dir, 'logs/usage.ndjson'));
    const fromEnv = ok(loadConfig({ file, cwd: elsewhere, env: { TOLLGATE_OBSERVABILITY__USAGE_EVENT__FILE: 'logs/u.ndjson' } }));
    assert.equal(fromEnv.observability.usage_event.file, join(elsewhere, 'logs/u.ndjson'));
  });

  test('absolute paths are kept', () => {
    const file = writeConfig('resources_file: /etc/tollgate/resources.yaml\n');
    assert.equal(ok(loadConfig({ file, cwd: '/x', env: {} })).resources_file, '/etc/tollgate/resources.yaml');
  });

  test('defaults to process.cwd() when cwd is not given', () => {
    const config = ok(loadConfig({ env: { TOLLGATE_RESOURCES_FILE: 'r.yaml' } }));
    assert.equal(config.resources_file, resolve(process.cwd(), 'r.yaml'));
  });
});

test('load.ts re-exports parseAddr', () => {
  assert.deepEqual(parseAddr('[::1]:0'), { host: '::1', port: 0 });
});

describe('ratelimit cross-key rules', () => {
  test('are reported by the loader (so `start` and every config check see them)', () => {
    assertErrors(fromYaml('ratelimit: {concurrency_ttl_secs: 5, lease_renew_interval_ms: 5000}\n'), [
      'ratelimit.lease_renew_interval_ms: must be shorter than ratelimit.concurrency_ttl_secs',
    ]);
    assertErrors(fromYaml('ratelimit: {backend: redis, redis: {mode: cluster}}\n'), ['ratelimit.redis.nodes: must list at least one node in cluster mode']);
    // Redis-only rules do not apply to the memory backend.
    assert.equal(fromYaml('ratelimit: {redis: {mode: cluster}}\n').ok, true);
    assertErrors(fromYaml('ratelimit: {backend: redis, redis: {mode: sentinel}}\n'), [
      'ratelimit.redis.sentinels: must list at least one sentinel in sentinel mode',
      'ratelimit.redis.master_name: required in sentinel mode',
    ]);
  });

  test('are reported with the errors of other sections, not only once the whole file is valid', () => {
    assertErrors(fromYaml('proxy: {addr: foo}\nratelimit: {concurrency_ttl_secs: 5, lease_renew_interval_ms: 5000}\n'), [
      'proxy.addr: invalid address "foo" (expected host:port)',
      'ratelimit.lease_renew_interval_ms: must be shorter than ratelimit.concurrency_ttl_secs',
    ]);
    // A section that fails its own schema is not read by the cross-key rules.
    assertErrors(fromYaml('ratelimit: {concurrency_ttl_secs: x, lease_renew_interval_ms: 5000}\n'), [
      'ratelimit.concurrency_ttl_secs: must be an integer >= 1',
    ]);
    assertErrors(fromYaml('ratelimit: 5\n'), ['ratelimit: must be a mapping']);
  });
});
