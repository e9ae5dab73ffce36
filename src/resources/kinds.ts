// The resource kinds a resources file holds, in processing order: collection name, identity
// field(s), published schema, the closed branch a document is validated against, and the
// per-kind semantic check and normalization that run after schema validation.

import type { TSchema } from '@sinclair/typebox';
import type { Report } from './issues.ts';
import { ProviderKeySchema, checkProviderKey, normalizeProviderKey, type ProviderKeyDoc } from './provider-key.ts';
import {
  DIRECT_ONLY_FIELDS, DirectModelSchema, ModelSchema, RoutingModelSchema, checkModel, type ModelDoc,
} from './model.ts';
import { ApiKeySchema, checkApiKey, type ApiKeyDoc } from './api-key.ts';
import {
  PassthroughRouteSchema, checkPassthroughRoute, normalizePassthroughRoute, type PassthroughRouteDoc,
} from './passthrough-route.ts';
import { GUARDRAIL_BRANCHES, GUARDRAIL_KINDS, GuardrailSchema, checkGuardrail, type GuardrailDoc } from './guardrail.ts';
import {
  GuardrailAttachmentSchema, checkGuardrailAttachment, type GuardrailAttachmentDoc,
} from './guardrail-attachment.ts';
import {
  ClassicRateLimitPolicySchema, ConditionalRateLimitPolicySchema, RateLimitPolicySchema, checkRateLimitPolicy,
  type RateLimitPolicyDoc,
} from './rate-limit-policy.ts';
import {
  EXPORTER_BRANCHES, EXPORTER_KINDS, ObservabilityExporterSchema, checkObservabilityExporter,
  type ObservabilityExporterDoc,
} from './observability-exporter.ts';

export const COLLECTIONS = [
  'provider_keys',
  'models',
  'api_keys',
  'passthrough_routes',
  'guardrails',
  'guardrail_attachments',
  'rate_limit_policies',
  'observability_exporters',
] as const;
export type Collection = (typeof COLLECTIONS)[number];

/** The branch a document is validated against, or an error when no branch applies. */
export type BranchChoice = { branch: string } | { error: { path: string[]; message: string } };

export interface KindSpec {
  collection: Collection;
  /** Basename of the published schema file: `schemas/resources/<schemaName>.schema.json`. */
  schemaName: string;
  /** Human name used in messages ("unknown provider key ..."). */
  label: string;
  /** Identity field(s); with two, exactly one must be given. Empty for derived identities. */
  identity: readonly string[];
  /** The published schema (a union for kinds with several shapes). */
  schema: TSchema;
  /** Closed schemas validated individually, and how a document picks one. */
  branches: Record<string, TSchema>;
  selectBranch(doc: Record<string, unknown>): BranchChoice;
  /** Message for an unknown field, when a kind can say more than "unknown field". */
  unknownField?(branch: string, field: string, depth: number): string | undefined;
  check(doc: unknown, report: Report, written: ReadonlySet<string>): void;
  normalize?(doc: unknown): void;
}

const single = (schema: TSchema): Pick<KindSpec, 'branches' | 'selectBranch'> => ({
  branches: { default: schema },
  selectBranch: () => ({ branch: 'default' }),
});

function byKind(branches: Record<string, TSchema>, kinds: readonly string[]): Pick<KindSpec, 'branches' | 'selectBranch'> {
  return {
    branches,
    selectBranch(doc) {
      const kind = doc.kind;
      if (kind === undefined) return { error: { path: ['kind'], message: `required (one of: ${kinds.join(', ')})` } };
      if (typeof kind !== 'string' || !Object.hasOwn(branches, kind)) {
        return { error: { path: ['kind'], message: `must be one of: ${kinds.join(', ')}` } };
      }
      return { branch: kind };
    },
  };
}

export const KINDS: Record<Collection, KindSpec> = {
  provider_keys: {
    collection: 'provider_keys',
    schemaName: 'provider_key',
    label: 'provider key',
    identity: ['display_name'],
    schema: ProviderKeySchema,
    ...single(ProviderKeySchema),
    check: (doc, report) => checkProviderKey(doc as ProviderKeyDoc, report),
    normalize: (doc) => normalizeProviderKey(doc as ProviderKeyDoc),
  },
  models: {
    collection: 'models',
    schemaName: 'model',
    label: 'model',
    identity: ['display_name'],
    schema: ModelSchema,
    branches: { direct: DirectModelSchema, routing: RoutingModelSchema },
    selectBranch: (doc) => ({ branch: 'routing' in doc ? 'routing' : 'direct' }),
    unknownField(branch, field, depth) {
      if (depth === 0 && branch === 'routing' && DIRECT_ONLY_FIELDS.includes(field)) {
        return 'not allowed on a routing model (only direct models have a provider, key and upstream model)';
      }
      return undefined;
    },
    check: (doc, report) => checkModel(doc as ModelDoc, report),
  },
  api_keys: {
    collection: 'api_keys',
    schemaName: 'api_key',
    label: 'API key',
    identity: ['display_name'],
    schema: ApiKeySchema,
    ...single(ApiKeySchema),
    check: (doc, report) => checkApiKey(doc as ApiKeyDoc, report),
  },
  passthrough_routes: {
    collection: 'passthrough_routes',
    schemaName: 'passthrough_route',
    label: 'pass-through route',
    identity: ['name', 'display_name'],
    schema: PassthroughRouteSchema,
    ...single(PassthroughRouteSchema),
    check: (doc, report, written) => checkPassthroughRoute(doc as PassthroughRouteDoc, report, written),
    normalize: (doc) => normalizePassthroughRoute(doc as PassthroughRouteDoc),
  },
  guardrails: {
    collection: 'guardrails',
    schemaName: 'guardrail',
    label: 'guardrail',
    identity: ['name'],
    schema: GuardrailSchema,
    ...byKind(GUARDRAIL_BRANCHES, GUARDRAIL_KINDS),
    unknownField(branch, field, depth) {
      if (depth === 0 && (branch === 'keyword' || branch === 'pii') && ['fail_open', 'output_fail_open', 'timeout_ms'].includes(field)) {
        return `not allowed on a ${branch} guardrail (it runs locally)`;
      }
      return undefined;
    },
    check: (doc, report) => checkGuardrail(doc as GuardrailDoc, report),
  },
  guardrail_attachments: {
    collection: 'guardrail_attachments',
    schemaName: 'guardrail_attachment',
    label: 'guardrail attachment',
    identity: [],
    schema: GuardrailAttachmentSchema,
    ...single(GuardrailAttachmentSchema),
    check: (doc, report, written) =>
      checkGuardrailAttachment(doc as GuardrailAttachmentDoc, report, written.has('scope_id') ? 'scope_id' : 'scope'),
  },
  rate_limit_policies: {
    collection: 'rate_limit_policies',
    schemaName: 'rate_limit_policy',
    label: 'rate limit policy',
    identity: ['name'],
    schema: RateLimitPolicySchema,
    branches: { classic: ClassicRateLimitPolicySchema, conditional: ConditionalRateLimitPolicySchema },
    selectBranch: (doc) => ({ branch: 'limits' in doc ? 'conditional' : 'classic' }),
    check: (doc, report) => checkRateLimitPolicy(doc as RateLimitPolicyDoc, report),
  },
  observability_exporters: {
    collection: 'observability_exporters',
    schemaName: 'observability_exporter',
    label: 'observability exporter',
    identity: ['name'],
    schema: ObservabilityExporterSchema,
    ...byKind(EXPORTER_BRANCHES, EXPORTER_KINDS),
    check: (doc, report) => checkObservabilityExporter(doc as ObservabilityExporterDoc, report),
  },
};
