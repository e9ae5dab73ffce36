// The normalized resource documents a load produces: the canonical JSON document of each
// kind (what an etcd row holds: references by id, key hashes only, schema defaults filled
// in) plus its derived `id`. Consumers (snapshot, admin, sources) import these types.

import type { ProviderKeyDoc } from './provider-key.ts';
import type { DirectModelDoc, RoutingModelDoc } from './model.ts';
import type { ApiKeyDoc } from './api-key.ts';
import type { PassthroughRouteDoc } from './passthrough-route.ts';
import type { GuardrailDoc } from './guardrail.ts';
import type { GuardrailAttachmentDoc } from './guardrail-attachment.ts';
import type { RateLimitPolicyDoc } from './rate-limit-policy.ts';
import type { ObservabilityExporterDoc } from './observability-exporter.ts';

export type { RateLimit } from './common.ts';
export type { Condition } from './rate-limit-policy.ts';

type WithId<T> = T & { id: string };

export type ProviderKey = WithId<ProviderKeyDoc>;
/** A direct model: provider, optional model_name, provider_key_id. */
export type DirectModel = WithId<DirectModelDoc>;
/** A routing model (model group): `routing` with targets and strategy. */
export type RoutingModel = WithId<RoutingModelDoc>;
export type Model = DirectModel | RoutingModel;
/** A caller key: key_hash only (never the plaintext); allowed_models always present. */
export type ApiKey = WithId<ApiKeyDoc>;
/** A pass-through route; its identity is always in `name` (a file's display_name is moved there). */
export type PassthroughRoute = WithId<Omit<PassthroughRouteDoc, 'name' | 'display_name'> & { name: string }>;
export type Guardrail = WithId<GuardrailDoc>;
export type GuardrailAttachment = WithId<GuardrailAttachmentDoc>;
export type RateLimitPolicy = WithId<RateLimitPolicyDoc>;
export type ObservabilityExporter = WithId<ObservabilityExporterDoc>;

export interface Resources {
  provider_keys: ProviderKey[];
  models: Model[];
  api_keys: ApiKey[];
  passthrough_routes: PassthroughRoute[];
  guardrails: Guardrail[];
  guardrail_attachments: GuardrailAttachment[];
  rate_limit_policies: RateLimitPolicy[];
  observability_exporters: ObservabilityExporter[];
}
