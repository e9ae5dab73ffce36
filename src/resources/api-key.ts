// API key: a caller credential, stored only as the SHA-256 of the key, plus what it may use
// (model and pass-through route allowlists) and its limits and owner labels.

import { Type, type Static } from '@sinclair/typebox';
import { Closed, NonEmptyString, NonNegativeInt, RateLimitSchema } from './common.ts';
import type { Report } from './issues.ts';

export const KEY_HASH_PATTERN = '^[0-9a-f]{64}$';

export const ApiKeySchema = Closed(
  {
    display_name: Type.Optional(NonEmptyString({ description: 'identity (required in a resources file)' })),
    key_hash: Type.String({ pattern: KEY_HASH_PATTERN, description: 'lowercase hex SHA-256 of the key (in a file: key_env or key_hash)' }),
    allowed_models: Type.Array(NonEmptyString(), { description: 'model names or single-* globs; [] allows none' }),
    allowed_routes: Type.Optional(Type.Array(NonEmptyString(), { description: 'pass-through route names or globs; absent or [] allows none' })),
    allowed_agents: Type.Optional(Type.Array(NonEmptyString())),
    mcp_access: Type.Optional(Closed({
      allow: Type.Array(NonEmptyString()),
      deny: Type.Optional(Type.Array(NonEmptyString())),
    })),
    mcp_rate_limits: Type.Optional(Type.Record(Type.String(), Closed({
      rps: Type.Optional(NonNegativeInt()),
      rpm: Type.Optional(NonNegativeInt()),
      rph: Type.Optional(NonNegativeInt()),
      rpd: Type.Optional(NonNegativeInt()),
      concurrency: Type.Optional(NonNegativeInt()),
    }))),
    rate_limit: Type.Optional(RateLimitSchema),
    expires_at: Type.Optional(Type.String({ format: 'date-time', description: 'RFC 3339 instant; the key is rejected from then on' })),
    disabled: Type.Optional(Type.Boolean({ default: false })),
    team_id: Type.Optional(NonEmptyString()),
    user_id: Type.Optional(NonEmptyString()),
    user_name: Type.Optional(NonEmptyString()),
    jwt_subject: Type.Optional(NonEmptyString()),
    jwt_provider: Type.Optional(NonEmptyString()),
  },
  { title: 'api_key', description: 'A caller credential (stored as its SHA-256)' },
);

export type ApiKeyDoc = Static<typeof ApiKeySchema>;

/** Checks JSON Schema cannot express. */
export function checkApiKey(doc: ApiKeyDoc, report: Report): void {
  for (const [field, list] of [['allowed_models', doc.allowed_models], ['allowed_routes', doc.allowed_routes ?? []]] as const) {
    list.forEach((entry, i) => {
      if (entry.split('*').length > 2) report([field, i], 'may contain at most one "*"');
    });
  }
  if (doc.jwt_subject !== undefined && doc.jwt_provider === undefined) {
    report(['jwt_subject'], 'requires jwt_provider');
  }
}
