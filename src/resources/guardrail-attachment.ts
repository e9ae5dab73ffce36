// Guardrail attachment: binds a guardrail to a scope (the whole environment, a model, an
// API key, a team, a pass-through route or an MCP server) with a priority. A guardrail with
// any attachment loses its implicit environment-wide application.

import { Type, type Static } from '@sinclair/typebox';
import { Closed, NonEmptyString, Nullable, StringEnum } from './common.ts';
import type { Report } from './issues.ts';

export const ATTACHMENT_SCOPE_TYPES = ['env', 'model', 'api_key', 'team', 'passthrough_route', 'mcp_server'] as const;
export type AttachmentScopeType = (typeof ATTACHMENT_SCOPE_TYPES)[number];

export const GuardrailAttachmentSchema = Closed(
  {
    name: Type.Optional(NonEmptyString({ description: 'identity; default <guardrail>/<scope_type>[/<scope>]' })),
    guardrail_id: NonEmptyString({ description: 'id of the guardrail (in a file: guardrail: <name>)' }),
    scope_type: StringEnum(ATTACHMENT_SCOPE_TYPES),
    scope_id: Type.Optional(Nullable(NonEmptyString({ description: 'id of the scoped resource; null for env (in a file: scope: <name>)' }))),
    priority: Type.Optional(Type.Integer({ default: 0, description: 'higher wins when one guardrail is attached twice' })),
    enabled: Type.Optional(Type.Boolean({ default: true })),
    env_id: Type.Optional(NonEmptyString()),
  },
  { title: 'guardrail_attachment', description: 'Binds a guardrail to a scope' },
);

export type GuardrailAttachmentDoc = Static<typeof GuardrailAttachmentSchema>;

/** Checks JSON Schema cannot express. `scopeField` is the spelling the file used (scope or scope_id). */
export function checkGuardrailAttachment(doc: GuardrailAttachmentDoc, report: Report, scopeField = 'scope'): void {
  const hasScope = doc.scope_id !== undefined && doc.scope_id !== null;
  if (doc.scope_type === 'env' && hasScope) report([scopeField], 'not allowed when scope_type is env');
  if (doc.scope_type !== 'env' && !hasScope) report([scopeField], `required when scope_type is ${doc.scope_type}`);
}
