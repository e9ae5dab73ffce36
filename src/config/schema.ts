// The bootstrap config (config.yaml) schema: every key, its type, default and bounds.
// TypeBox is the single source: the GatewayConfig type, the Ajv validator (load.ts) and
// the env-override coercion (env.ts) all derive from ConfigSchema.
//
// Every object is closed (unknown keys fail boot) and carries `default: {}` so that Ajv's
// useDefaults fills a missing section and then the defaults of its keys. Two custom
// formats are registered by the loader: `host-port`, `redis-url` (see address.ts) and `ip-or-cidr`.
// `x-message` is an annotation the loader uses as the error text of a failed `pattern`.

import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { SECRET_REQUEST_HEADERS } from '../lib/header-rules.ts';

/** Node's timers overflow above 2^31-1 ms (and then fire after 1 ms), so no duration may exceed it. */
const MAX_TIMER_MS = 2_147_483_647;
const MAX_TIMER_SECS = Math.floor(MAX_TIMER_MS / 1000);

/** RFC 9110 token: the characters an HTTP header name may contain. */
const HEADER_NAME = "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$";

/** Longest accepted `proxy.url_rewrites[].match` source: a guard against pathological patterns. */
export const MAX_URL_REWRITE_PATTERN = 512;

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

const anyCase = (s: string): string => [...s].map((c) => (/[a-z]/.test(c) ? `[${c}${c.toUpperCase()}]` : c)).join('');
/** Matches any header name except the credential ones, in any letter case. */
const NOT_CREDENTIAL_HEADER = `^(?!(?:${SECRET_REQUEST_HEADERS.map(anyCase).join('|')})$)`;

/** Readable name labels of the per-request metric families (observability/metrics.ts). */
const NAME_LABELS = ['api_key_name', 'team_name', 'provider_key_name', 'policy_name', 'user_name'] as const;

/** Histogram defaults; observability/metrics.ts holds the same lists (a test keeps them equal). */
const DEFAULT_BUCKETS = {
  request_duration: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600],
  request_e2e_latency: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 420, 600],
  request_ttft: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300],
  guardrail_latency: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
};

const buckets = (def: readonly number[], description: string) =>
  Type.Array(Type.Number({ exclusiveMinimum: 0 }), { minItems: 1, default: [...def], description });

const section = <T extends Parameters<typeof Type.Object>[0]>(properties: T, description: string) =>
  Type.Object(properties, { additionalProperties: false, default: {}, description });

const address = (def: string, description: string) =>
  Type.String({ format: 'host-port', default: def, description });

const headerName = (description: string, def?: string) =>
  Type.String({
    pattern: HEADER_NAME,
    'x-message': 'must be a valid HTTP header name',
    description,
    ...(def === undefined ? {} : { default: def }),
  });

const millis = (def: number, description: string) =>
  Type.Integer({ minimum: 0, maximum: MAX_TIMER_MS, default: def, description });

const seconds = (def: number, description: string) =>
  Type.Integer({ minimum: 0, maximum: MAX_TIMER_SECS, default: def, description });

const logLevel = Type.Unsafe<(typeof LOG_LEVELS)[number]>({
  type: 'string',
  enum: [...LOG_LEVELS],
  default: 'info',
  description: 'Minimum level of the process log.',
});

const ProxySchema = section(
  {
    addr: address('127.0.0.1:3000', 'Listen address of the AI proxy (host:port; port 0 picks a free port).'),
    request_body_limit_bytes: Type.Integer({
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      default: 33_554_432,
      description: 'Largest accepted request body in bytes; larger bodies get 413. 0 = no cap.',
    }),
    request_timeout_ms: millis(300_000, 'Time allowed to receive a whole request (head and body) from the caller; a slower one gets 408 and its connection is closed. 0 = off.'),
    max_in_flight_requests: Type.Integer({
      minimum: 0,
      maximum: 1_000_000,
      default: 0,
      description: 'Most requests the proxy listener serves at once; past it a new request is refused at once with 503 overloaded and Retry-After: 1 (load shedding), except /livez and /readyz. 0 = no cap.',
    }),
    send_timeout_ms: millis(300_000, 'Longest time the caller may read none of a response it is being sent (a stalled reader); then its connection is closed and the request recorded as 499. 0 = off.'),
    request_id: section(
      {
        accept_headers: Type.Array(headerName('Header name.'), {
          default: ['x-tollgate-request-id'],
          description:
            'Inbound headers whose value is taken as the request id (first present wins). Credential headers are rejected.',
        }),
      },
      'Request id handling.',
    ),
    real_ip: section(
      {
        header: headerName(
          'Header carrying the client address chain when the peer is a trusted proxy.',
          'x-forwarded-for',
        ),
        trusted_proxies: Type.Array(Type.String({ format: 'ip-or-cidr' }), {
          default: [],
          description: 'IP addresses or CIDRs of proxies whose `header` is believed. Empty = trust nobody.',
        }),
        recursive: Type.Boolean({
          default: false,
          description: 'Walk the header right to left skipping trusted addresses (nginx real_ip_recursive).',
        }),
      },
      'Client IP resolution behind reverse proxies (nginx real_ip semantics).',
    ),
    url_rewrites: Type.Array(
      Type.Object(
        {
          name: Type.Optional(Type.String({ minLength: 1, description: 'Label of the rule (documentation only).' })),
          match: Type.String({
            minLength: 1,
            maxLength: MAX_URL_REWRITE_PATTERN,
            description: 'Regular expression (JavaScript syntax, no flags) tested against the raw request path, query excluded.',
          }),
          rewrite: Type.String({
            description: 'Replacement of the matched part, as String.prototype.replace takes it ($1, $<name>, $&, $$).',
          }),
        },
        { additionalProperties: false },
      ),
      {
        default: [],
        description:
          'Path rewrites applied before any route matching (pass-through host stage, typed routes, pass-through path stage). The first matching rule wins and is applied once; the query string is kept.',
      },
    ),
  },
  'The AI data-plane listener.',
);

const AdminSchema = section(
  {
    enabled: Type.Boolean({ default: false, description: 'Start the admin listener.' }),
    addr: address('127.0.0.1:9180', 'Listen address of the admin API.'),
    admin_keys: Type.Array(Type.String({ minLength: 1 }), {
      default: [],
      description: 'Accepted admin credentials (Authorization: Bearer <key> or x-api-key). Required when enabled.',
    }),
  },
  'The admin (control-plane) listener.',
);

const ObservabilitySchema = section(
  {
    log_level: logLevel,
    access_log: Type.Boolean({ default: true, description: 'Write one access-log line per answered request.' }),
    metrics: section(
      {
        prometheus: section(
          {
            enabled: Type.Boolean({ default: true, description: 'Start the metrics/status listener.' }),
            path: Type.String({
              pattern: '^/[^\\s?#]*$',
              'x-message': 'must be a path starting with / (no spaces, query or fragment)',
              default: '/metrics',
              description: 'Path serving the Prometheus exposition.',
            }),
            addr: address('127.0.0.1:9090', 'Listen address of the metrics/status listener.'),
          },
          'Prometheus exposition.',
        ),
        labels: section(
          Object.fromEntries(
            NAME_LABELS.map((n) => [n, Type.Boolean({ default: false, description: `Add the readable \`${n}\` label to the per-request families.` })]),
          ) as Record<(typeof NAME_LABELS)[number], ReturnType<typeof Type.Boolean>>,
          'Readable name labels (off by default: ids are the stable labels).',
        ),
        buckets: section(
          {
            request_duration: buckets(DEFAULT_BUCKETS.request_duration, 'tollgate_request_duration_seconds and the proxy/llm duration families.'),
            request_e2e_latency: buckets(DEFAULT_BUCKETS.request_e2e_latency, 'tollgate_request_e2e_latency_seconds.'),
            request_ttft: buckets(DEFAULT_BUCKETS.request_ttft, 'tollgate_request_ttft_seconds and tollgate_llm_time_to_first_token_seconds.'),
            guardrail_latency: buckets(DEFAULT_BUCKETS.guardrail_latency, 'tollgate_guardrail_latency_seconds.'),
          },
          'Histogram bucket upper bounds in seconds (finite, > 0, strictly ascending; +Inf is implied).',
        ),
      },
      'Metrics.',
    ),
    usage_event: section(
      {
        request_headers: Type.Array(
          Type.String({
            allOf: [
              { type: 'string', pattern: HEADER_NAME, 'x-message': 'must be a valid HTTP header name' },
              { type: 'string', pattern: NOT_CREDENTIAL_HEADER, 'x-message': 'carries credentials and cannot be captured in usage events' },
            ],
          }),
          { default: [], description: 'Request headers copied into every usage event (request_headers). Credential headers are refused.' },
        ),
        file: Type.Optional(Type.String({ minLength: 1, description: 'Append usage events to this file as NDJSON (one event per line). Unset = no file.' })),
        log: Type.Boolean({ default: true, description: 'Also write every usage event as a "type":"usage" JSON line on the process log (stderr).' }),
      },
      'Usage events.',
    ),
    debug: section(
      {
        enabled: Type.Boolean({ default: false, description: 'Start the debug listener (heap diagnostics).' }),
        addr: address('127.0.0.1:9091', 'Listen address of the debug listener. Keep it on loopback.'),
        path: Type.String({
          pattern: '^/[^\\s?#]*$',
          'x-message': 'must be a path starting with / (no spaces, query or fragment)',
          default: '/debug/pprof/heap',
          description: 'Path serving heap statistics (?format=heapsnapshot: a V8 heap snapshot).',
        }),
      },
      'Heap diagnostics.',
    ),
  },
  'Logs and metrics.',
);

const UpstreamSchema = section(
  {
    timeout_ms: millis(6_000_000, 'Time allowed from sending an upstream request to its response head, and for a non-streaming request to its whole body. 0 = off.'),
    stream_timeout_ms: millis(0, 'Streaming responses: the longest wait for the first event and between two events. 0 = use timeout_ms.'),
    connect_timeout_ms: millis(5000, 'Time allowed to open an upstream connection. 0 = off.'),
    retries: Type.Integer({ minimum: 0, maximum: 10, default: 2, description: 'Same-target retries of a retryable failure when no other target is left. 0 = off.' }),
  },
  'Outbound request defaults (a model or route may override them).',
);

const ShutdownSchema = section(
  {
    min_drain_secs: seconds(
      0,
      'After SIGTERM/SIGINT (readiness already 503), keep accepting connections this long so load balancers notice.',
    ),
    drain_timeout_secs: seconds(
      30,
      'After listeners stop accepting, wait at most this long for in-flight requests, then exit. 0 = do not wait.',
    ),
  },
  'Graceful shutdown.',
);

const stringEnum = <const T extends readonly string[]>(values: T, def: T[number], description: string) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], default: def, description });

const RateLimitConfigSchema = section(
  {
    backend: stringEnum(['memory', 'redis'] as const, 'memory', 'Where rate-limit counters and concurrency slots live: this process, or Redis (shared by every gateway using it).'),
    failure_mode: stringEnum(
      ['fail_open', 'fail_closed'] as const,
      'fail_open',
      'When Redis is unreachable: fail_open counts in process-local counters until it is back; fail_closed refuses limited requests with 503.',
    ),
    concurrency_ttl_secs: Type.Integer({
      minimum: 1,
      maximum: MAX_TIMER_SECS,
      default: 300,
      description: 'Lifetime of a Redis concurrency lease that is not renewed (recovers the slots of a crashed gateway).',
    }),
    lease_renew_interval_ms: Type.Integer({
      minimum: 10,
      maximum: MAX_TIMER_MS,
      default: 10_000,
      description: 'How often a running request renews its Redis concurrency leases; must be shorter than concurrency_ttl_secs.',
    }),
    redis: section(
      {
        mode: stringEnum(['single', 'cluster', 'sentinel'] as const, 'single', 'Redis topology.'),
        url: Type.String({ format: 'redis-url', default: 'redis://127.0.0.1:6379', description: 'single mode: redis:// or rediss:// URL.' }),
        nodes: Type.Array(Type.String({ format: 'host-port' }), { default: [], description: 'cluster mode: seed nodes (host:port).' }),
        sentinels: Type.Array(Type.String({ format: 'host-port' }), { default: [], description: 'sentinel mode: sentinel addresses (host:port).' }),
        master_name: Type.Optional(Type.String({ minLength: 1, description: 'sentinel mode: name of the monitored master.' })),
        username: Type.Optional(Type.String({ minLength: 1, description: 'ACL user name.' })),
        password: Type.Optional(Type.String({ minLength: 1, description: 'Password (never logged).' })),
        database: Type.Integer({ minimum: 0, maximum: 15, default: 0, description: 'Database index (single and sentinel modes).' }),
        tls: Type.Boolean({ default: false, description: 'Connect with TLS (cluster and sentinel modes; in single mode a rediss:// URL also does).' }),
        key_prefix: Type.String({
          minLength: 1,
          default: 'tollgate:{rl}:',
          description: 'Prefix of every key. Keep a {hash tag} in it for cluster mode: all keys of one check must share a slot.',
        }),
        command_timeout_ms: Type.Integer({
          minimum: 1,
          maximum: MAX_TIMER_MS,
          default: 1000,
          description: 'A Redis call taking longer counts as a failure (failure_mode applies).',
        }),
      },
      'The Redis store (backend: redis).',
    ),
  },
  'Rate, token and concurrency limits: where their counters live.',
);

export const ConfigSchema = Type.Object(
  {
    resources_file: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'Path to resources.yaml. Relative paths resolve against the config file directory. Unset = built-in demo resources.',
      }),
    ),
    proxy: ProxySchema,
    admin: AdminSchema,
    observability: ObservabilitySchema,
    upstream: UpstreamSchema,
    shutdown: ShutdownSchema,
    ratelimit: RateLimitConfigSchema,
  },
  { additionalProperties: false, title: 'Tollgate bootstrap config (config.yaml)' },
) satisfies TSchema;

/** The loaded config: every default applied, so only resources_file may be absent. */
export type GatewayConfig = Static<typeof ConfigSchema>;
