// The bootstrap config (config.yaml) schema: every key, its type, default and bounds.
// TypeBox is the single source: the GatewayConfig type, the Ajv validator (load.ts) and
// the env-override coercion (env.ts) all derive from ConfigSchema.
//
// Every object is closed (unknown keys fail boot) and carries `default: {}` so that Ajv's
// useDefaults fills a missing section and then the defaults of its keys. Two custom
// formats are registered by the loader: `host-port` (see address.ts) and `ip-or-cidr`.
// `x-message` is an annotation the loader uses as the error text of a failed `pattern`.

import { Type, type Static, type TSchema } from '@sinclair/typebox';

/** Node's timers overflow above 2^31-1 ms (and then fire after 1 ms), so no duration may exceed it. */
const MAX_TIMER_MS = 2_147_483_647;
const MAX_TIMER_SECS = Math.floor(MAX_TIMER_MS / 1000);

/** RFC 9110 token: the characters an HTTP header name may contain. */
const HEADER_NAME = "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$";

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

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
      },
      'Metrics.',
    ),
  },
  'Logs and metrics.',
);

const UpstreamSchema = section(
  {
    timeout_ms: millis(6_000_000, 'Total time allowed for a non-streaming upstream request. 0 = off.'),
    stream_timeout_ms: millis(0, 'Total time allowed for a streaming upstream request. 0 = use timeout_ms.'),
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
  },
  { additionalProperties: false, title: 'Tollgate bootstrap config (config.yaml)' },
) satisfies TSchema;

/** The loaded config: every default applied, so only resources_file may be absent. */
export type GatewayConfig = Static<typeof ConfigSchema>;
