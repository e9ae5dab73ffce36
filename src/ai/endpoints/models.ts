// GET /v1/models: the concrete aliases the caller's key may use (spec 2 §4.1).
import type { RequestContext } from '../../http/context.ts';
import { sendJson } from '../../http/respond.ts';
import { authenticate, currentSnapshot } from '../phases.ts';
import type { ProxyOptions } from '../proxy.ts';

export function listModels(ctx: RequestContext, options: ProxyOptions): void {
  const snapshot = currentSnapshot(options.snapshots);
  const key = authenticate(ctx, snapshot);
  const created = Math.floor(snapshot.createdAt / 1000);
  const data = snapshot.visibleModels(key).map((m) => ({ id: m.name, object: 'model', created, owned_by: m.provider }));
  sendJson(ctx, 200, { object: 'list', data });
}
