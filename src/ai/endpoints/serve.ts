// The phases every model-serving endpoint runs: authenticate the caller, read and parse its body,
// resolve the caller's model, admit (limits), then the dispatch core.
import type { RequestContext } from '../../http/context.ts';
import { readBody } from '../../http/body.ts';
import type { ApiKeyEntry, Snapshot } from '../../snapshot/snapshot.ts';
import { admitLimits } from '../../limits/admit.ts';
import type { CallerRequest } from '../dispatch/attempt.ts';
import { dispatch } from '../dispatch/core.ts';
import { authenticate, currentSnapshot, parseRequest, resolveModel } from '../phases.ts';
import type { ProxyOptions } from '../proxy.ts';

/**
 * A model endpoint's request, served: `parse` checks the body (a 400 names the field) and
 * `describe` says what the caller asked for. `limited`: whether the request limits apply.
 */
export async function serveParsed<T>(
  ctx: RequestContext,
  options: ProxyOptions,
  parse: (raw: Buffer) => T,
  describe: (request: T, key: ApiKeyEntry) => CallerRequest,
  limited = true,
): Promise<void> {
  const snapshot = currentSnapshot(options.snapshots);
  const key = authenticate(ctx, snapshot);
  const request = parseRequest(ctx, await readBody(ctx, options.bodyLimitBytes), parse);
  await serveModel(ctx, options, snapshot, key, describe(request, key), limited);
}

async function serveModel(
  ctx: RequestContext,
  options: ProxyOptions,
  snapshot: Snapshot,
  key: ApiKeyEntry,
  call: CallerRequest,
  limited = true,
): Promise<void> {
  ctx.stream = call.stream;
  const resolved = resolveModel(ctx, snapshot, key, call.alias);
  // No limit that applies, no admit phase: not even a promise to await.
  const admitting = limited ? admitLimits(ctx, options.limits, snapshot, key, resolved.entry, call.codec) : undefined;
  if (admitting !== undefined) await admitting;
  await dispatch(ctx, call, resolved, { snapshot, settings: options.upstream, health: options.health, usage: options.usage });
}
