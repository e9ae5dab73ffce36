// Guardrail: a content check run on requests and/or responses. The `kind` field picks one
// closed branch: local `keyword` and `pii` checks, or a remote moderation service. Which
// guardrails apply where is decided by guardrail_attachments (or env-wide by default).

import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Closed, NonEmptyString, StringEnum, regexError } from './common.ts';
import type { Report } from './issues.ts';

export const PII_DETECTORS = [
  'email', 'china_mobile', 'china_id_card', 'bank_card', 'us_ssn', 'ip_address', 'api_key', 'jwt', 'private_key',
] as const;

/** Remote kinds that only send text to a service. */
export const REMOTE_KINDS = ['lakera', 'openai_moderation', 'presidio', 'bedrock', 'azure_content_safety', 'semantic'] as const;
/** Remote text-moderation kinds that also scan streamed output in windows. */
export const WINDOWED_KINDS = ['azure_content_safety_text_moderation', 'aliyun_text_moderation', 'aliyun_ai_guardrail'] as const;
export const GUARDRAIL_KINDS = ['keyword', 'pii', ...REMOTE_KINDS, ...WINDOWED_KINDS] as const;
export type GuardrailKind = (typeof GUARDRAIL_KINDS)[number];

const DEFAULT_BUFFER_BYTES = 262144;

const common = {
  name: NonEmptyString({ description: 'identity' }),
  enabled: Type.Optional(Type.Boolean({ default: true })),
  hook_point: Type.Optional(StringEnum(['both', 'input', 'output'], { default: 'both', description: 'which side is checked' })),
  enforcement_mode: Type.Optional(StringEnum(['block', 'monitor'], { default: 'block', description: 'monitor records would-block/would-mask without acting' })),
  mandatory: Type.Optional(Type.Boolean({ default: false, description: 'unavailability blocks even when fail_open' })),
  direction: Type.Optional(StringEnum(['both', 'input', 'output'], { default: 'both', description: 'hint only' })),
  input_messages: Type.Optional(StringEnum(['latest_turn', 'all'], { description: 'which request messages are scanned' })),
  created_at: Type.Optional(Type.String({ format: 'date-time', description: 'chain order, oldest first; missing sorts last' })),
};

const bufferKnobs = {
  max_buffer_bytes: Type.Optional(Type.Integer({ minimum: 1, default: DEFAULT_BUFFER_BYTES })),
  on_buffer_exceeded: Type.Optional(StringEnum(['fail_closed', 'fail_open'], { default: 'fail_closed' })),
};

const Action = () => StringEnum(['mask', 'block']);

export const KeywordGuardrailSchema = Closed({
  ...common,
  kind: Type.Literal('keyword'),
  patterns: Type.Optional(Type.Array(Closed({
    kind: StringEnum(['literal', 'regex'], { description: 'literal = case-insensitive substring; regex = JavaScript regex ((?i) prefix allowed)' }),
    value: NonEmptyString(),
  }), { default: [] })),
}, { title: 'keyword guardrail' });

export const PiiGuardrailSchema = Closed({
  ...common,
  kind: Type.Literal('pii'),
  detectors: Type.Optional(Type.Array(Closed({
    type: StringEnum(PII_DETECTORS),
    action: Type.Optional(Action()),
  }), { default: [] })),
  custom_patterns: Type.Optional(Type.Array(Closed({
    name: NonEmptyString({ maxLength: 64 }),
    regex: NonEmptyString(),
    action: Type.Optional(Action()),
    replacement: Type.Optional(Type.String({ maxLength: 256 })),
  }), { default: [] })),
  default_action: Type.Optional(StringEnum(['mask', 'block'], { default: 'mask' })),
  ...bufferKnobs,
}, { title: 'pii guardrail' });

const remoteKnobs = {
  fail_open: Type.Optional(Type.Boolean({ default: true, description: 'allow traffic when the service fails' })),
  output_fail_open: Type.Optional(Type.Boolean({ default: false })),
  timeout_ms: Type.Optional(Type.Integer({ minimum: 1, default: 5000 })),
  endpoint: Type.Optional(Type.String({ pattern: '^https?://', description: 'service URL' })),
  api_key: Type.Optional(NonEmptyString({ description: 'service credential (use ${VAR})' })),
  region: Type.Optional(NonEmptyString()),
  model: Type.Optional(NonEmptyString()),
  settings: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'vendor-specific options' })),
};

function remoteBranch(kind: (typeof REMOTE_KINDS)[number]) {
  return Closed({ ...common, kind: Type.Literal(kind), ...remoteKnobs }, { title: `${kind} guardrail` });
}

function windowedBranch(kind: (typeof WINDOWED_KINDS)[number]) {
  return Closed({
    ...common,
    kind: Type.Literal(kind),
    ...remoteKnobs,
    stream_processing_mode: Type.Optional(StringEnum(['window', 'buffer_full'], { default: 'window' })),
    window_size: Type.Optional(Type.Integer({
      minimum: 1,
      default: kind.startsWith('azure') ? 10000 : 2000,
    })),
    window_overlap_size: Type.Optional(Type.Integer({ minimum: 0, default: 256 })),
    ...bufferKnobs,
  }, { title: `${kind} guardrail` });
}

/** One closed schema per kind, selected by the `kind` field. */
export const GUARDRAIL_BRANCHES: Record<GuardrailKind, TSchema> = {
  keyword: KeywordGuardrailSchema,
  pii: PiiGuardrailSchema,
  lakera: remoteBranch('lakera'),
  openai_moderation: remoteBranch('openai_moderation'),
  presidio: remoteBranch('presidio'),
  bedrock: remoteBranch('bedrock'),
  azure_content_safety: remoteBranch('azure_content_safety'),
  semantic: remoteBranch('semantic'),
  azure_content_safety_text_moderation: windowedBranch('azure_content_safety_text_moderation'),
  aliyun_text_moderation: windowedBranch('aliyun_text_moderation'),
  aliyun_ai_guardrail: windowedBranch('aliyun_ai_guardrail'),
};

export const GuardrailSchema = Type.Union(
  GUARDRAIL_KINDS.map((k) => GUARDRAIL_BRANCHES[k]),
  { title: 'guardrail', description: 'A content guardrail; `kind` selects the branch' },
);

export type KeywordGuardrailDoc = Static<typeof KeywordGuardrailSchema>;
export type PiiGuardrailDoc = Static<typeof PiiGuardrailSchema>;
export type RemoteGuardrailDoc = Omit<Static<ReturnType<typeof remoteBranch>>, 'kind'> & { kind: (typeof REMOTE_KINDS)[number] };
export type WindowedGuardrailDoc = Omit<Static<ReturnType<typeof windowedBranch>>, 'kind'> & { kind: (typeof WINDOWED_KINDS)[number] };
export type GuardrailDoc = KeywordGuardrailDoc | PiiGuardrailDoc | RemoteGuardrailDoc | WindowedGuardrailDoc;

/** Checks JSON Schema cannot express. */
export function checkGuardrail(doc: GuardrailDoc, report: Report): void {
  if (doc.kind === 'keyword') {
    (doc.patterns ?? []).forEach((p, i) => {
      if (p.kind !== 'regex') return;
      const e = regexError(p.value);
      if (e) report(['patterns', i, 'value'], e);
    });
  } else if (doc.kind === 'pii') {
    const types = new Map<string, number>();
    (doc.detectors ?? []).forEach((d, i) => {
      const first = types.get(d.type);
      if (first !== undefined) report(['detectors', i, 'type'], `duplicate detector "${d.type}" (also detectors[${first}])`);
      else types.set(d.type, i);
    });
    const names = new Map<string, number>();
    (doc.custom_patterns ?? []).forEach((p, i) => {
      const e = regexError(p.regex);
      if (e) report(['custom_patterns', i, 'regex'], e);
      const key = p.name.toUpperCase();
      const first = names.get(key);
      if (first !== undefined) report(['custom_patterns', i, 'name'], `duplicate name "${p.name}" (also custom_patterns[${first}])`);
      else names.set(key, i);
    });
  } else if ((WINDOWED_KINDS as readonly string[]).includes(doc.kind)) {
    const w = doc as WindowedGuardrailDoc;
    if (w.window_size !== undefined && w.window_overlap_size !== undefined && w.window_overlap_size >= w.window_size) {
      report(['window_overlap_size'], 'must be smaller than window_size');
    }
  }
}
