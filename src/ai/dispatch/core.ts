// The dispatch core shared by every AI endpoint (ARCHITECTURE §5): resolve the caller's model to
// targets, run attempts, and turn the last failure into the caller's error.
import type { RequestContext } from '../../http/context.ts';
import type { ResolvedModel } from '../../snapshot/snapshot.ts';
import { GatewayError } from '../../lib/errors.ts';
import { attempt, type CallerRequest, type Target, type UpstreamSettings } from './attempt.ts';

function directTarget(call: CallerRequest, resolved: ResolvedModel): Target {
  const entry = resolved.entry;
  const pk = entry.providerKey;
  if (pk === undefined || pk.adapter === undefined) {
    throw new GatewayError('provider_unavailable', `model '${call.alias}' has no usable provider: ${pk?.unavailable ?? 'provider key missing'}`);
  }
  return { entry, providerKey: pk, adapter: pk.adapter, upstreamModel: resolved.upstreamModel };
}

/** Serve one caller request. Throws a GatewayError only when nothing was written to the caller. */
export async function dispatch(ctx: RequestContext, call: CallerRequest, resolved: ResolvedModel, settings: UpstreamSettings): Promise<void> {
  if (resolved.entry.kind === 'group') {
    throw new GatewayError('not_implemented', `model '${call.alias}' is a multi-target model group, which this gateway version cannot dispatch yet`);
  }
  const target = directTarget(call, resolved);
  const result = await attempt(ctx, call, target, settings);
  if (result.ok) return;
  const f = result.failure;
  ctx.fail(f.errorClass, f.status !== undefined ? `upstream returned ${f.status}` : f.error.message);
  throw f.error;
}
