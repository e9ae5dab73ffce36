// The phases every model-serving endpoint runs after parsing its body: resolve the caller's model,
// admit (limits), then the dispatch core.
import type { RequestContext } from '../../http/context.ts';
import type { ApiKeyEntry, Snapshot } from '../../snapshot/snapshot.ts';
import { admitLimits } from '../../limits/admit.ts';
import type { CallerRequest } from '../dispatch/attempt.ts';
import { dispatch } from '../dispatch/core.ts';
import { resolveModel } from '../phases.ts';
import type { ProxyOptions } from '../proxy.ts';

export async function serveModel(
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
