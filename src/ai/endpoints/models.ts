// GET /v1/models: the concrete aliases the caller's key may use (spec 2 §4.1), from where it
// calls (a model whose allowed_cidrs exclude the client is not listed to it). One list serves
// both SDKs: the OpenAI fields (`object`, `created`, `owned_by`) and the Anthropic Models API's
// (`type`, `display_name`, `created_at`, and the page's `has_more`, `first_id`, `last_id`), so
// `models.list()` works unchanged in either. Everything fits one page.
import type { RequestContext } from '../../http/context.ts';
import { sendJson } from '../../http/respond.ts';
import { authenticate, currentSnapshot } from '../phases.ts';
import type { ProxyOptions } from '../proxy.ts';
import { sourceAllowed } from '../../lib/source-cidrs.ts';

export function listModels(ctx: RequestContext, options: ProxyOptions): void {
  const snapshot = currentSnapshot(options.snapshots);
  const key = authenticate(ctx, snapshot);
  const created = Math.floor(snapshot.createdAt / 1000);
  const createdAt = new Date(created * 1000).toISOString();
  const usable = snapshot.visibleModels(key).filter((m) => m.allowedCidrs === undefined || sourceAllowed(m.allowedCidrs, ctx.clientIp));
  const data = usable.map((m) => ({
    id: m.name,
    object: 'model',
    created,
    owned_by: m.provider,
    type: 'model',
    display_name: m.name,
    created_at: createdAt,
  }));
  sendJson(ctx, 200, { object: 'list', data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null });
}
