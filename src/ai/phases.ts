// The request phases every AI endpoint shares before dispatch: the current snapshot,
// authenticate (the caller's API key) and resolve (allowlist, the alias table, then the model's
// client address allowlist).
import { GatewayError } from '../lib/errors.ts';
import type { RequestContext } from '../http/context.ts';
import { hashKey, presentedKey } from '../auth/api-key.ts';
import type { ApiKeyEntry, ResolvedModel, Snapshot, SnapshotHolder } from '../snapshot/snapshot.ts';
import { sourceAllowed } from '../lib/source-cidrs.ts';
import { MAX_MODEL_NAME_CHARS } from './protocols/openai-chat.ts';

export function currentSnapshot(snapshots: SnapshotHolder): Snapshot {
  const snapshot = snapshots.current;
  if (snapshot === undefined) throw new GatewayError('shutting_down', 'no configuration has been applied yet');
  return snapshot;
}

/** authenticate: the caller's API key, or a 401. */
export function authenticate(ctx: RequestContext, snapshot: Snapshot): ApiKeyEntry {
  const presented = presentedKey(ctx.req.headers);
  if (presented === undefined) throw new GatewayError('missing_api_key', 'Missing API key in request', { publicCode: 'missing_api_key' });
  const key = snapshot.apiKeysByHash.get(hashKey(presented));
  if (key === undefined) throw new GatewayError('invalid_api_key', 'Invalid API key', { publicCode: 'invalid_api_key' });
  ctx.apiKeyId = key.id;
  ctx.apiKeyName = key.name;
  ctx.apiKeyTeam = key.doc.team_id;
  ctx.apiKeyUser = key.doc.user_name ?? key.doc.user_id;
  if (key.disabled) throw new GatewayError('api_key_disabled', 'API key has been disabled');
  if (key.expiresAt !== undefined && key.expiresAt <= Date.now()) throw new GatewayError('api_key_expired', 'API key has expired');
  return key;
}

/**
 * parse: the endpoint's body parser. A body it refuses that still names a model (a string within
 * the length cap) records it, so the usage row of the 400 says which model the caller asked for.
 */
export function parseRequest<T>(ctx: RequestContext, raw: Buffer, parse: (raw: Buffer) => T): T {
  try {
    return parse(raw);
  } catch (e) {
    ctx.requestedModel ??= namedModel(raw);
    throw e;
  }
}

/** The `model` a refused body names, read again on the error path only. */
function namedModel(raw: Buffer): string | undefined {
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    return undefined;
  }
  const model = body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>).model : undefined;
  return typeof model === 'string' && model.length <= MAX_MODEL_NAME_CHARS ? model : undefined;
}

/**
 * resolve: the allowlist is checked on the caller's own string, before existence, so a key
 * cannot probe for aliases it may not use (ADR 0002).
 */
export function resolveModel(ctx: RequestContext, snapshot: Snapshot, key: ApiKeyEntry, requested: string): ResolvedModel {
  ctx.requestedModel = requested;
  if (!snapshot.isModelAllowed(key, requested)) {
    throw new GatewayError('model_access_forbidden', `Access to model '${requested}' is forbidden`);
  }
  const resolved = snapshot.resolveModel(requested);
  if (resolved === undefined) {
    throw new GatewayError('model_not_found', `The model '${requested}' does not exist`);
  }
  const entry = resolved.entry;
  ctx.model = entry.name;
  ctx.modelId = entry.id;
  ctx.provider = entry.provider;
  ctx.upstreamModel = resolved.upstreamModel;
  if (entry.allowedCidrs !== undefined && !sourceAllowed(entry.allowedCidrs, ctx.clientIp)) {
    throw new GatewayError('ip_restricted', 'Access denied: your client IP is not allowed to use this model');
  }
  return resolved;
}
