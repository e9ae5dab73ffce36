// Limits on pass-through requests (spec 3 §8), as an admit check for the pass-through data
// plane: request-count limits of the caller key, its team and member (key inline limits and
// key/team/member/team_member policies) before dispatch; token limits checked only (a
// pass-through response never charges token counters); concurrency held for the whole exchange
// (renewed in Redis, and the exchange ended if the lease is lost). On an `inject` route, a
// top-level JSON `model` that names a configured model of the route's provider (its display name,
// else its `model_name`) adds that model's limits; `forward_client` routes do no lookup. No `x-ratelimit-*` headers are added:
// the upstream's own headers (often of the same names) reach the caller unchanged.
//
// The types are structural copies of the pass-through hook contract (src/passthrough/hooks.ts),
// so this module does not depend on the pass-through plane; start.ts registers the check there.
import { isGatewayError, type GatewayError } from '../lib/errors.ts';
import type { RequestContext } from '../http/context.ts';
import type { ApiKeyEntry, ModelEntry, Snapshot } from '../snapshot/snapshot.ts';
import { LEASE_LOST_MESSAGE, type Limiter } from './limiter.ts';

export interface PassthroughLimitRequest {
  readonly ctx: RequestContext;
  readonly snapshot: Snapshot;
  readonly credentialMode: 'inject' | 'forward_client';
  /** The injected provider key (inject routes). */
  readonly providerKeyId: string | undefined;
  readonly key: ApiKeyEntry;
  /** The body's top-level `model` for recognised shapes, else ''. */
  readonly requestedModel: string;
}

/** A gateway-generated failure in the pass-through envelope's terms. */
export interface PassthroughLimitError {
  readonly code: string;
  readonly status: number;
  readonly type: string;
  readonly message: string;
  readonly headers?: Record<string, string>;
  readonly policy?: { readonly id: string; readonly name: string };
}

export type PassthroughLimitResult =
  | {
      readonly ok: true;
      readonly release?: () => void;
      readonly bind?: (end: (failure: { readonly error: PassthroughLimitError; readonly errorClass: string }) => void) => void;
    }
  | { readonly ok: false; readonly error: PassthroughLimitError; readonly errorClass: string };

function asPassthroughError(e: GatewayError): PassthroughLimitError {
  const out: { -readonly [K in keyof PassthroughLimitError]: PassthroughLimitError[K] } = { code: e.publicCode ?? e.code, status: e.status, type: e.type, message: e.publicMessage };
  if (e.headers !== undefined) out.headers = e.headers;
  if (e.policy !== undefined) out.policy = e.policy;
  return out;
}

const LEASE_LOST: PassthroughLimitError = { code: 'rate_limit_lease_lost', status: 429, type: 'rate_limit_error', message: LEASE_LOST_MESSAGE };

/** The configured model whose limits an inject route's request also reserves, if any. */
export function passthroughModel(req: PassthroughLimitRequest): ModelEntry | undefined {
  if (req.credentialMode !== 'inject' || req.requestedModel === '' || req.providerKeyId === undefined) return undefined;
  const provider = req.snapshot.providerKeys.get(req.providerKeyId)?.view.provider;
  return provider === undefined ? undefined : req.snapshot.modelOfProvider(provider, req.requestedModel);
}

/** The admit check to register in the pass-through hooks (`passthroughHooks.admit`). */
export function passthroughLimitCheck(limiter: Limiter): (req: PassthroughLimitRequest) => Promise<PassthroughLimitResult> {
  return async (req) => {
    let handle;
    try {
      handle = await limiter.admit({ snapshot: req.snapshot, key: req.key, model: passthroughModel(req), chargeTokens: false, attribution: req.ctx });
    } catch (err) {
      if (!isGatewayError(err)) throw err;
      return { ok: false, error: asPassthroughError(err), errorClass: err.code };
    }
    if (handle === undefined) return { ok: true };
    if (req.ctx.clientDisconnected) {
      handle.release(undefined);
      return { ok: true };
    }
    return {
      ok: true,
      release: () => handle.release(undefined),
      bind: handle.slotKeys.length === 0 ? undefined : (end) => handle.onLost(() => end({ error: LEASE_LOST, errorClass: 'rate_limit_lease_lost' })),
    };
  };
}
