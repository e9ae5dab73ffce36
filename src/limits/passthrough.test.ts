import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { RequestContext } from '../http/context.ts';
import { Limiter } from './limiter.ts';
import { MemoryStore } from './memory-store.ts';
import { passthroughLimitCheck, passthroughModel, type PassthroughLimitRequest } from './passthrough.ts';
import { keyEntry, testSnapshot } from './test-snapshot.ts';

const snapshot = testSnapshot({
  provider_keys: [{ provider: 'openai' }, { provider: 'anthropic' }],
  models: [
    { display_name: 'gpt', provider: 'openai', provider_key_id: 'pk-0', rate_limit: { rpm: 1 } },
    { display_name: 'claude', provider: 'anthropic', provider_key_id: 'pk-1', rate_limit: { rpm: 1 } },
    // Two aliases of one upstream model: a body naming it gets the smallest id's limits.
    { display_name: 'mini-b', provider: 'openai', provider_key_id: 'pk-0', model_name: 'gpt-4o-mini' },
    { display_name: 'mini-a', provider: 'openai', provider_key_id: 'pk-0', model_name: 'gpt-4o-mini' },
    // A display name that is another provider's model_name: the route's provider decides.
    { display_name: 'claude-3-haiku', provider: 'openai', provider_key_id: 'pk-0', model_name: 'gpt-4.1' },
    { display_name: 'haiku', provider: 'anthropic', provider_key_id: 'pk-1', model_name: 'claude-3-haiku' },
    { display_name: 'openai/*', provider: 'openai', provider_key_id: 'pk-0' },
  ],
  api_keys: [{ rate_limit: { rpm: 5, tpm: 10, concurrency: 1 } }],
});

const ctx = { clientDisconnected: false, policyName: undefined } as unknown as RequestContext;
const request = (over: Partial<PassthroughLimitRequest> = {}): PassthroughLimitRequest => ({
  ctx,
  snapshot,
  credentialMode: 'inject',
  providerKeyId: 'pk-0',
  key: keyEntry(snapshot, 'key-0'),
  requestedModel: '',
  ...over,
});

test('an inject route adds the limits of a configured model of its own provider; forward_client looks nothing up', () => {
  assert.equal(passthroughModel(request({ requestedModel: 'gpt' }))?.name, 'gpt');
  assert.equal(passthroughModel(request({ requestedModel: 'claude' })), undefined, 'another provider');
  assert.equal(passthroughModel(request({ requestedModel: 'unknown' })), undefined);
  assert.equal(passthroughModel(request({ requestedModel: 'gpt', credentialMode: 'forward_client', providerKeyId: undefined })), undefined);
});

test('a body naming the upstream model_name finds its model; the route\'s provider decides; wildcards never match', () => {
  const ids = new Map(snapshot.resources.models.map((m) => [m.display_name, m.id]));
  const smaller = [ids.get('mini-a')!, ids.get('mini-b')!].sort()[0];
  assert.equal(passthroughModel(request({ requestedModel: 'gpt-4o-mini' }))?.id, smaller);
  assert.equal(passthroughModel(request({ requestedModel: 'claude-3-haiku', providerKeyId: 'pk-1' }))?.name, 'haiku');
  assert.equal(passthroughModel(request({ requestedModel: 'claude-3-haiku' }))?.name, 'claude-3-haiku');
  assert.equal(passthroughModel(request({ requestedModel: 'openai/gpt-4o' })), undefined);
});

test('the check reserves request counts and a slot, refuses in the gateway envelope, never charges tokens', async () => {
  const store = new MemoryStore();
  const check = passthroughLimitCheck(new Limiter({ store }));
  const first = await check(request({ requestedModel: 'gpt' }));
  assert.equal(first.ok, true);
  // The key's concurrency slot is held until release.
  const busy = await check(request());
  assert.deepEqual(busy, { ok: false, errorClass: 'rate_limit_exceeded', error: { code: 'rate_limit_exceeded', status: 429, type: 'rate_limit_error', message: 'concurrency limit exceeded' } });
  if (!first.ok) return;
  first.release?.();
  // The model's rpm 1 was reserved by the first request.
  const model = await check(request({ requestedModel: 'gpt' }));
  assert.equal(model.ok, false);
  if (!model.ok) assert.equal(model.error.headers?.['retry-after'] !== undefined, true);
  // Tokens are not charged by pass-through: a release after a huge response leaves tpm untouched.
  const again = await check(request());
  assert.equal(again.ok, true);
  if (again.ok) again.release?.();
  assert.equal((await check(request())).ok, true);
});

test('a lost lease ends the exchange through the bound callback, as a 429 rate_limit_lease_lost', async () => {
  const inner = new MemoryStore();
  // A shared store whose renewals report every lease gone.
  const store = { admit: inner.admit.bind(inner), charge: inner.charge.bind(inner), release: inner.release.bind(inner), renew: () => false, close: inner.close.bind(inner) };
  const limiter = new Limiter({ store, renewIntervalMs: 1_000_000 });
  const result = await passthroughLimitCheck(limiter)(request());
  assert.ok(result.ok && result.bind);
  const ended: string[] = [];
  result.bind((f) => ended.push(`${f.errorClass}: ${f.error.status} ${f.error.message}`));
  await limiter.renewAll();
  assert.deepEqual(ended, ['rate_limit_lease_lost: 429 distributed concurrency lease was lost']);
  result.release?.();
  await limiter.close();
});

test('a policy\'s refusal carries the policy, for the pass-through envelope\'s error.policy', async () => {
  const s = testSnapshot({ api_keys: [{}], policies: [{ scope: 'api_key', scope_ref: 'key-0', window: 'minute', max_requests: 1 } as never] });
  const check = passthroughLimitCheck(new Limiter({ store: new MemoryStore() }));
  const req = request({ snapshot: s, key: keyEntry(s, 'key-0') });
  assert.equal((await check(req)).ok, true);
  const refused = await check(req);
  assert.ok(!refused.ok);
  assert.deepEqual(refused.error.policy, { id: 'policy-0', name: 'p0' });
});
