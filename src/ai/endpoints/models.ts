// GET /v1/models and GET /v1/models/{model}: the concrete aliases the caller's key may use (spec
// 2 §4.1), from where it calls (a model whose allowed_cidrs exclude the client is not listed to
// it). One model object serves both SDKs: the OpenAI fields (`object`, `created`, `owned_by`)
// and the Anthropic Models API's (`type`, `display_name`, `created_at`, and the list page's
// `has_more`, `first_id`, `last_id`), so `models.list()` and `models.retrieve()` work unchanged
// in either. Everything fits one page. A model the list would not show is not retrieved either:
// 404 model_not_found, whether it does not exist or the key may not use it, so a key cannot
// probe for aliases it may not use.
import type { RequestContext } from '../../http/context.ts';
import { GatewayError } from '../../lib/errors.ts';
import { sendJson } from '../../http/respond.ts';
import { sourceAllowed } from '../../lib/source-cidrs.ts';
import type { ModelEntry, Snapshot } from '../../snapshot/snapshot.ts';
import { authenticate, currentSnapshot } from '../phases.ts';
import type { ProxyOptions } from '../proxy.ts';

export function listModels(ctx: RequestContext, options: ProxyOptions): void {
  const snapshot = currentSnapshot(options.snapshots);
  const data = usableModels(ctx, snapshot).map((m) => modelObject(m, snapshot));
  sendJson(ctx, 200, { object: 'list', data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null });
}

/** The model named by the path (`ctx.requestedModel`, set by the router), as the list shows it. */
export function retrieveModel(ctx: RequestContext, options: ProxyOptions): void {
  const snapshot = currentSnapshot(options.snapshots);
  const name = ctx.requestedModel ?? '';
  const m = usableModels(ctx, snapshot).find((e) => e.name === name);
  if (m === undefined) throw new GatewayError('model_not_found', `The model '${name}' does not exist`);
  ctx.model = m.name;
  sendJson(ctx, 200, modelObject(m, snapshot));
}

function usableModels(ctx: RequestContext, snapshot: Snapshot): ModelEntry[] {
  const key = authenticate(ctx, snapshot);
  return snapshot.visibleModels(key).filter((m) => m.allowedCidrs === undefined || sourceAllowed(m.allowedCidrs, ctx.clientIp));
}

function modelObject(m: ModelEntry, snapshot: Snapshot): Record<string, unknown> {
  const created = Math.floor(snapshot.createdAt / 1000);
  return {
    id: m.name,
    object: 'model',
    created,
    owned_by: m.provider,
    type: 'model',
    display_name: m.name,
    created_at: new Date(created * 1000).toISOString(),
  };
}
