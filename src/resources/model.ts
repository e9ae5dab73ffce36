// Model: a caller-facing model alias. Two shapes: a direct model (one provider key, one
// upstream model; may be a single-`*` wildcard alias) and a routing model (a group of
// other models with a selection strategy). The shape is chosen by the `routing` field.

import { Type, type Static } from '@sinclair/typebox';
import { Closed, NonEmptyString, NonNegativeInt, RateLimitSchema, StringEnum, cidrError } from './common.ts';
import type { Report } from './issues.ts';

export const ROUTING_STRATEGIES = ['failover', 'round_robin', 'consistent_hash', 'least_latency', 'least_busy', 'least_cost'] as const;
export const HASH_ON_TYPES = ['header', 'cookie', 'api_key', 'client_ip'] as const;
export const DEFAULT_COOLDOWN_TRIGGER_STATUSES = [401, 408, 429, 500, 502, 503, 504];

const HttpStatus = () => Type.Integer({ minimum: 100, maximum: 599 });

/** Fields every model shape accepts. */
const common = {
  display_name: NonEmptyString({ description: 'identity and the name callers send as `model`; a direct model may contain one `*`' }),
  rate_limit: Type.Optional(RateLimitSchema),
  allowed_cidrs: Type.Optional(Type.Array(NonEmptyString(), { description: 'client CIDRs allowed to use the model; empty = all' })),
  timeout: Type.Optional(NonNegativeInt('upstream request timeout in ms; 0 disables')),
  stream_timeout: Type.Optional(NonNegativeInt('maximum gap between stream chunks in ms; 0 disables')),
};

export const CostSchema = Closed({
  input_per_1k: Type.Optional(Type.Number({ minimum: 0, description: 'USD per 1000 input tokens' })),
  output_per_1k: Type.Optional(Type.Number({ minimum: 0, description: 'USD per 1000 output tokens' })),
}, { description: 'prices used for cost accounting and least_cost routing' });

export const CooldownSchema = Closed({
  enabled: Type.Optional(Type.Boolean({ default: true })),
  default_seconds: Type.Optional(Type.Integer({ minimum: 1, default: 30 })),
  max_seconds: Type.Optional(Type.Integer({ minimum: 1, default: 600 })),
  honor_retry_after: Type.Optional(Type.Boolean({ default: true })),
  trigger_statuses: Type.Optional(Type.Array(HttpStatus(), { default: DEFAULT_COOLDOWN_TRIGGER_STATUSES })),
  trigger_on_timeout: Type.Optional(Type.Boolean({ default: true })),
  trigger_on_transport: Type.Optional(Type.Boolean({ default: true })),
}, { description: 'take the model out of rotation after failing statuses' });

export const BackgroundModelCheckSchema = Closed({
  enabled: Type.Optional(Type.Boolean({ default: true })),
  interval_seconds: Type.Optional(Type.Integer({ minimum: 5 })),
  timeout_seconds: Type.Optional(Type.Integer({ minimum: 1 })),
  max_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
  prompt: Type.Optional(NonEmptyString()),
  stale_after_seconds: Type.Optional(Type.Integer({ minimum: 1 })),
  ignore_statuses: Type.Optional(Type.Array(HttpStatus())),
}, { description: 'periodic health probe of the upstream model' });

export const DirectModelSchema = Closed(
  {
    ...common,
    provider: Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-z0-9][a-z0-9._-]*$', description: 'provider label' }),
    model_name: Type.Optional(NonEmptyString({ description: 'upstream model; may contain `*` (capture of a wildcard alias)' })),
    provider_key_id: NonEmptyString({ description: 'id of the provider key (in a file: use provider_key: <name>)' }),
    retries: Type.Optional(NonNegativeInt('same-target retries')),
    cost: Type.Optional(CostSchema),
    cooldown: Type.Optional(CooldownSchema),
    background_model_check: Type.Optional(BackgroundModelCheckSchema),
    auto_prompt_caching: Type.Optional(Closed({
      enabled: Type.Optional(Type.Boolean({ default: true })),
      ttl: Type.Optional(StringEnum(['5m', '1h'], { default: '5m' })),
    }, { description: 'Anthropic prompt caching' })),
    embedding: Type.Optional(Closed({
      dimensions: Type.Optional(Type.Integer({ minimum: 1 })),
      normalize: Type.Optional(Type.Boolean({ default: true })),
    })),
  },
  { title: 'direct model', description: 'One upstream model behind one provider key' },
);

export const RoutingTargetSchema = Closed({
  model: NonEmptyString({ description: 'display_name of a model' }),
  weight: Type.Optional(Type.Integer({ minimum: 0, default: 1 })),
  priority: Type.Optional(Type.Integer({ default: 0, description: 'higher tiers are tried first' })),
  tags: Type.Optional(Type.Array(NonEmptyString())),
});

export const RoutingSchema = Closed({
  targets: Type.Array(RoutingTargetSchema, { minItems: 1 }),
  strategy: Type.Optional(StringEnum(ROUTING_STRATEGIES, { default: 'failover' })),
  retries: Type.Optional(NonNegativeInt('same-target retries')),
  retry_on_429: Type.Optional(Type.Boolean({ default: false })),
  fallback_on_statuses: Type.Optional(Type.Array(HttpStatus(), { description: '4xx statuses that still fall over' })),
  max_fallbacks: Type.Optional(NonNegativeInt('default: all later targets')),
  when_all_unavailable: Type.Optional(StringEnum(['fail', 'try_anyway'], { default: 'fail' })),
  hash_on: Type.Optional(Type.Array(Closed({
    type: StringEnum(HASH_ON_TYPES),
    name: Type.Optional(NonEmptyString()),
  }), { minItems: 1, description: 'consistent_hash keys, first present wins' })),
});

export const RoutingModelSchema = Closed(
  { ...common, routing: RoutingSchema },
  { title: 'routing model', description: 'A group of models with a selection strategy' },
);

export const ModelSchema = Type.Union([DirectModelSchema, RoutingModelSchema], {
  title: 'model',
  description: 'A model alias: direct (provider + provider_key_id) or routing (routing.targets)',
});

export type DirectModelDoc = Static<typeof DirectModelSchema>;
export type RoutingModelDoc = Static<typeof RoutingModelSchema>;
export type ModelDoc = Static<typeof ModelSchema>;

/** Direct-only fields, named when they appear on a routing model. */
export const DIRECT_ONLY_FIELDS = [
  'provider', 'model_name', 'provider_key_id', 'provider_key', 'retries', 'cost', 'cooldown',
  'background_model_check', 'auto_prompt_caching', 'embedding',
];

export function isRoutingModel(doc: ModelDoc): doc is RoutingModelDoc {
  return 'routing' in doc;
}

/** Checks JSON Schema cannot express. */
export function checkModel(doc: ModelDoc, report: Report): void {
  const stars = doc.display_name.split('*').length - 1;
  if (stars > 1) report(['display_name'], 'may contain at most one "*"');
  (doc.allowed_cidrs ?? []).forEach((c, i) => {
    const e = cidrError(c);
    if (e) report(['allowed_cidrs', i], e);
  });
  if (isRoutingModel(doc)) {
    if (stars > 0) report(['display_name'], 'only direct models may be wildcards ("*"); a routing model needs a plain name');
    const r = doc.routing;
    r.targets.forEach((t, i) => {
      if (t.model === doc.display_name) report(['routing', 'targets', i, 'model'], 'a routing model cannot target itself');
    });
    const seen = new Map<string, number>();
    r.targets.forEach((t, i) => {
      const key = `${t.model}\u0000${t.priority ?? 0}`;
      const first = seen.get(key);
      if (first !== undefined) report(['routing', 'targets', i, 'model'], `duplicate target (same model and priority as targets[${first}])`);
      else seen.set(key, i);
    });
    (r.hash_on ?? []).forEach((h, i) => {
      const needsName = h.type === 'header' || h.type === 'cookie';
      if (needsName && h.name === undefined) report(['routing', 'hash_on', i, 'name'], `required for type ${h.type}`);
      if (!needsName && h.name !== undefined) report(['routing', 'hash_on', i, 'name'], `only allowed for type header or cookie`);
    });
    if (r.hash_on && r.strategy !== 'consistent_hash') report(['routing', 'hash_on'], 'only used by strategy consistent_hash');
    (r.fallback_on_statuses ?? []).forEach((s, i) => {
      if (s < 400) report(['routing', 'fallback_on_statuses', i], 'must be an HTTP error status (400-599)');
    });
  } else {
    const c = doc.cooldown;
    if (c?.default_seconds !== undefined && c.max_seconds !== undefined && c.default_seconds > c.max_seconds) {
      report(['cooldown', 'default_seconds'], 'must not exceed max_seconds');
    }
    if (doc.model_name !== undefined && doc.model_name.split('*').length > 2) {
      report(['model_name'], 'may contain at most one "*"');
    }
    if (doc.model_name?.includes('*') && stars === 0) {
      report(['model_name'], 'may contain "*" only when display_name is a wildcard (the "*" is replaced by the captured text)');
    }
  }
}
