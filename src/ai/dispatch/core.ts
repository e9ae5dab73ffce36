// The dispatch core shared by every AI endpoint (ARCHITECTURE §5): resolve the caller's model to
// targets (one direct model, or a group's selection), run the attempt loop — same-target retries
// with backoff, immediate failover, cooldown bookkeeping, one zero-token usage row per failed
// attempt — and turn the last failure into the caller's error. Nothing fails over once a byte has
// reached the caller: an attempt that wrote anything is final.
import { setTimeout as sleep } from 'node:timers/promises';
import type { RequestContext } from '../../http/context.ts';
import type { ResolvedModel, Snapshot } from '../../snapshot/snapshot.ts';
import { GatewayError } from '../../lib/errors.ts';
import { attempt, NATIVE_ONLY, nativeOnlyUnsupported, refusal, servesNatively, type AttemptFailure, type CallerRequest, type Target, type UpstreamSettings } from './attempt.ts';
import { directCooldown, directRetries, groupPlan, type GroupTarget } from './groups.ts';
import type { CooldownPolicy, HealthTracker } from './health.ts';
import { attemptKind, backoffDelayMs, decideNext, retrySettings, type AttemptErrorClass, type Decision, type RetrySettings } from './retry-policy.ts';
import { selectTargets, ALL_UNAVAILABLE_RETRY_AFTER_S, type HashSources } from './select.ts';
import { requestedTags, ROUTING_TAGS_HEADER, tagFilter } from './routing-tags.ts';
import { usageEventFrom, type UsageSink } from '../../observability/usage-events.ts';

export const SERVED_BY_HEADER = 'x-tollgate-served-by';

export interface DispatchDeps {
  snapshot: Snapshot;
  settings: UpstreamSettings;
  health: HealthTracker;
  usage: UsageSink;
}

interface Candidate {
  readonly target: Target | GatewayError;
  /** The target's model and upstream name: an attempt's attribution, usable or not. */
  readonly spec: CandidateSpec;
  readonly key: string;
  readonly name: string;
  readonly retries: number | undefined;
  readonly cooldown: CooldownPolicy;
}

type CandidateSpec = Pick<GroupTarget, 'entry' | 'upstreamModel' | 'key' | 'retries' | 'cooldown' | 'timeoutMs' | 'streamTimeoutMs'>;

function candidate(call: CallerRequest, t: CandidateSpec): Candidate {
  const pk = t.entry.providerKey;
  const target: Target | GatewayError =
    pk === undefined || pk.adapter === undefined
      ? new GatewayError('provider_unavailable', `model '${call.alias}' has no usable provider: ${pk?.unavailable ?? 'provider key missing'}`)
      : { entry: t.entry, providerKey: pk, adapter: pk.adapter, upstreamModel: t.upstreamModel, timeoutMs: t.timeoutMs, streamTimeoutMs: t.streamTimeoutMs };
  return { target, spec: t, key: t.key, name: t.entry.name, retries: t.retries, cooldown: t.cooldown };
}

/**
 * Attribute the request to the candidate about to be tried (a target without a usable provider
 * included), with none of an earlier attempt's timings: each attempt's row, and the terminal row
 * of the last one, describe that attempt's target.
 */
function attribute(ctx: RequestContext, c: Candidate): void {
  const { entry, upstreamModel } = c.spec;
  ctx.modelId = entry.id;
  ctx.provider = entry.provider;
  ctx.upstreamModel = upstreamModel;
  ctx.providerKeyId = entry.providerKey?.id;
  ctx.providerKeyName = entry.providerKey?.name;
  ctx.upstreamSentMs = undefined;
  ctx.upstreamFirstByteMs = undefined;
  ctx.upstreamEndMs = undefined;
}

function hashSources(ctx: RequestContext): HashSources {
  return {
    header: (name) => {
      const v = ctx.req.headers[name];
      return Array.isArray(v) ? v[0] : v;
    },
    cookie: (name) => {
      const header = ctx.req.headers.cookie;
      if (header === undefined) return undefined;
      for (const part of header.split(';')) {
        const eq = part.indexOf('=');
        if (eq > 0 && part.slice(0, eq).trim() === name) return decodeURIComponent(part.slice(eq + 1).trim());
      }
      return undefined;
    },
    apiKey: () => ctx.apiKeyId,
    clientIp: () => ctx.clientIp,
  };
}

/** The ordered candidates for this request, and the retry settings that govern them. */
function candidates(ctx: RequestContext, call: CallerRequest, resolved: ResolvedModel, deps: DispatchDeps): { list: Candidate[]; retry: RetrySettings } {
  const entry = resolved.entry;
  if (entry.kind === 'direct') {
    return {
      list: [
        candidate(call, {
          entry,
          upstreamModel: resolved.upstreamModel,
          key: entry.id,
          retries: directRetries(entry),
          cooldown: directCooldown(entry),
          timeoutMs: entry.timeoutMs,
          streamTimeoutMs: entry.streamTimeoutMs,
        }),
      ],
      retry: retrySettings(undefined, deps.settings.retries),
    };
  }
  const plan = groupPlan(deps.snapshot, entry, deps.settings.retries);
  const tags = requestedTags(ctx.req.headers[ROUTING_TAGS_HEADER]);
  const tagged = tagFilter(plan.state.config.targets, tags);
  if (tagged !== undefined && !plan.state.config.targets.some(tagged)) {
    throw new GatewayError('invalid_request', `no target of model '${call.alias}' carries the routing tags ${[...tags!].join(', ')} or the tag default`, { publicCode: null });
  }
  // The operations in NATIVE_ONLY are served natively only: the group's targets that serve them
  // natively are its candidates, the others are passed over.
  const native = NATIVE_ONLY.has(call.operation)
    ? (t: GroupTarget) => servesNatively(call, t.entry.providerKey?.adapter, t.entry.provider)
    : undefined;
  const eligible = native === undefined ? tagged : tagged === undefined ? native : (t: GroupTarget) => tagged(t) && native(t);
  const selection = selectTargets(plan.state, deps.health, { hash: hashSources(ctx), eligible });
  if (selection.mode === 'none_eligible') throw refusal(ctx, nativeOnlyUnsupported(call, { tags: tagged === undefined ? [] : [...tags!] }));
  if (selection.targets.length === 0) {
    throw new GatewayError('all_candidates_unavailable', `all targets of model '${call.alias}' are unavailable`, {
      headers: { 'retry-after': String(ALL_UNAVAILABLE_RETRY_AFTER_S) },
    });
  }
  const list = selection.targets.map((t) => candidate(call, t));
  return { list, retry: plan.retry };
}

/** Serve one caller request. Throws a GatewayError only when nothing was written to the caller. */
export async function dispatch(ctx: RequestContext, call: CallerRequest, resolved: ResolvedModel, deps: DispatchDeps): Promise<void> {
  const { list, retry } = candidates(ctx, call, resolved, deps);
  const health = deps.health;
  let index = 0;
  let retriesUsed = 0;
  let previous: Exclude<Decision, 'stop'> | undefined;
  for (;;) {
    const c = list[index];
    const kind = attemptKind(previous);
    ctx.attempts++;
    ctx.attemptKind = kind;
    attribute(ctx, c);
    if (c.target instanceof GatewayError) {
      // A target without a usable provider fails like an invalid configuration: no retry. Its
      // error becomes the request's only when no target follows (a later one may serve it).
      if (index + 1 < list.length) {
        emitFailedAttempt(ctx, deps.usage, c, { errorClass: 'invalid_config', status: undefined, retryAfterMs: undefined, error: c.target });
        index++;
        ctx.fallbacks++;
        retriesUsed = 0;
        previous = 'fallback';
        continue;
      }
      ctx.fail('invalid_config', c.target.message);
      throw c.target;
    }
    const target = c.target;
    if (resolved.entry.kind === 'group') ctx.res.setHeader(SERVED_BY_HEADER, c.name);
    health.start(c.key);
    const startedAt = performance.now();
    let result;
    try {
      result = await attempt(ctx, call, target, deps.settings);
    } finally {
      health.finish(c.key);
    }
    if (result.ok) {
      // least_latency ranks by response-head latency: the first upstream byte, not the whole
      // exchange (a long answer is no slow target). A local adapter has no upstream call.
      const headMs = ctx.upstreamFirstByteMs !== undefined && ctx.upstreamSentMs !== undefined
        ? ctx.upstreamFirstByteMs - ctx.upstreamSentMs
        : performance.now() - startedAt;
      recordServed(ctx, health, c.key, c.cooldown, headMs);
      return;
    }
    const f = result.failure;
    health.recordFailure(c.key, f, c.cooldown);
    const decision: Decision = ctx.clientDisconnected
      ? 'stop'
      : decideNext(f, retry, { targetRetries: c.retries, retriesUsed, fallbacksUsed: ctx.fallbacks, hasNextTarget: index + 1 < list.length });
    if (decision === 'stop') {
      if (resolved.entry.kind === 'group') ctx.res.removeHeader(SERVED_BY_HEADER);
      // The gateway already retried or failed over: an SDK retrying on top multiplies the calls
      // (3 gateway attempts for each of 3 SDK attempts: 9 upstream calls). The OpenAI and
      // Anthropic SDKs obey this header.
      if (ctx.attempts > 1) ctx.res.setHeader('x-should-retry', 'false');
      // Otherwise the caller gets the upstream's own verdict, as its SDK would have calling it.
      else if (f.shouldRetry !== undefined) ctx.res.setHeader('x-should-retry', String(f.shouldRetry));
      ctx.fail(f.errorClass, f.status !== undefined ? `upstream returned ${f.status}` : f.error.message);
      throw f.error;
    }
    emitFailedAttempt(ctx, deps.usage, c, f);
    if (decision === 'retry_same') {
      retriesUsed++;
      const delay = backoffDelayMs(retriesUsed, f.retryAfterMs, Math.random);
      if (!(await waitUnlessGone(ctx, delay))) return;
    } else {
      index++;
      ctx.fallbacks++;
      retriesUsed = 0;
    }
    previous = decision;
  }
}

/** Wait before a retry; false when the caller left meanwhile (nothing more to do). */
async function waitUnlessGone(ctx: RequestContext, ms: number): Promise<boolean> {
  if (ms <= 0) return !ctx.clientDisconnected;
  const ac = new AbortController();
  const off = ctx.onCancel(() => ac.abort());
  try {
    await sleep(ms, undefined, { signal: ac.signal });
  } catch {
    ctx.fail('client_disconnected', 'client disconnected while the gateway waited to retry');
    return false;
  } finally {
    off();
  }
  return true;
}

/** A failed attempt's own row: zero tokens, unbilled, with its kind and error (spec 2 §4.3 rule 5). */
function emitFailedAttempt(ctx: RequestContext, usage: UsageSink, c: Candidate, f: AttemptFailure): void {
  usage.emit(
    usageEventFrom(ctx, {
      modelId: c.key,
      status: f.status !== undefined && f.status >= 400 && f.status < 500 ? f.status : f.error.status,
      errorClass: f.errorClass,
      errorMessage: f.status !== undefined ? `upstream returned ${f.status}` : f.error.message,
      billable: false,
    }),
    ctx.req,
  );
}

/** Failures of a stream after its head went out: the target's, though the caller got a 200 head. */
const STREAM_FAILURES: ReadonlySet<string> = new Set(['upstream_in_band', 'upstream_decode', 'transport', 'timeout']);

/**
 * The health verdict of an attempt that answered the caller: a success, or the failure that cut
 * its stream short. A caller that left cut the exchange short itself: that says nothing about
 * the target.
 */
function recordServed(ctx: RequestContext, health: HealthTracker, key: string, cooldown: CooldownPolicy, ms: number): void {
  const kind = ctx.errorKind;
  // A connection the gateway cut on the upstream's failure (a byte body has no error frame) is
  // the upstream's verdict, not the caller leaving.
  if (ctx.clientDisconnected && (kind === undefined || !STREAM_FAILURES.has(kind))) return;
  if (kind === undefined) health.recordSuccess(key, ms);
  else if (STREAM_FAILURES.has(kind)) {
    // An in-band error's status is the upstream's answer; the others are judged by their class.
    health.recordFailure(key, { errorClass: kind as AttemptErrorClass, status: kind === 'upstream_in_band' ? ctx.status : undefined }, cooldown);
  }
}
