import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadResourcesText } from '../../resources/loader.ts';
import { Snapshot } from '../../snapshot/snapshot.ts';
import { groupPlan, healthTargets, type GroupTarget } from './groups.ts';

const YAML = `
_format_version: "1"
provider_keys:
  - { display_name: up, provider: openai, api_key: k, api_base: "http://127.0.0.1:1/v1" }
models:
  - { display_name: a, provider: openai, model_name: up-a, provider_key: up, retries: 3, timeout: 111 }
  - { display_name: b, provider: openai, model_name: up-b, provider_key: up, cost: { input_per_1k: 0.5, output_per_1k: 1.5 } }
  - { display_name: "w-*", provider: openai, provider_key: up }
  - display_name: inner
    timeout: 222
    stream_timeout: 333
    routing: { targets: [ { model: b, weight: 4 }, { model: w-x } ] }
  - display_name: outer
    timeout: 999
    routing:
      retries: 1
      targets: [ { model: a, priority: 2 }, { model: inner, priority: 1 }, { model: w-y } ]
`;

function snapshotOf(text: string): Snapshot {
  const r = loadResourcesText(text, {});
  assert.ok(r.ok, r.ok ? '' : r.errors.join('\n'));
  return new Snapshot(r.resources, 1, r.count);
}

function plan() {
  const snapshot = snapshotOf(YAML);
  const outer = snapshot.resolveModel('outer')!.entry;
  return groupPlan(snapshot, outer, 2);
}

test('nested groups are flattened in place with the outer priority and their own weights', () => {
  const targets = plan().state.config.targets;
  assert.deepEqual(targets.map((t) => [t.name, t.upstreamModel, t.priority, t.weight]), [
    ['a', 'up-a', 2, 1],
    ['b', 'up-b', 1, 4],
    ['w-*', 'x', 1, 1],
    ['w-*', 'y', 0, 1],
  ]);
});

test('a wildcard model serving two targets gets one health key per served name', () => {
  const keys = plan().state.config.targets.map((t) => t.key);
  assert.equal(new Set(keys).size, keys.length);
  assert.match(keys[2], /#x$/);
  assert.match(keys[3], /#y$/);
});

test('timeouts: the model\'s own, else its nearest group\'s; retries and cost come from the model', () => {
  const [a, b, wx, wy] = plan().state.config.targets;
  assert.equal(a.timeoutMs, 111);
  assert.equal(b.timeoutMs, 222, 'inner group timeout');
  assert.equal(b.streamTimeoutMs, 333);
  assert.equal(wx.timeoutMs, 222);
  assert.equal(wy.timeoutMs, 999, 'outer group timeout');
  assert.equal(a.retries, 3);
  assert.equal(b.retries, undefined);
  assert.equal(b.costPer1k, 2);
  assert.equal(a.costPer1k, undefined);
});

test('the plan is compiled once per group entry; group retry settings come from routing', () => {
  const r = loadResourcesText(YAML, {});
  assert.ok(r.ok);
  const snapshot = new Snapshot(r.resources, 1, r.count);
  const outer = snapshot.resolveModel('outer')!.entry;
  const p = groupPlan(snapshot, outer, 2);
  assert.equal(groupPlan(snapshot, outer, 2), p);
  assert.equal(p.retry.retries, 1);
  assert.equal(p.retry.deploymentRetries, 2);
});

test('health keys: every model id and every group target key, nested and wildcard targets included', () => {
  const snapshot = snapshotOf(YAML);
  const keys = healthTargets(snapshot);
  const ids = snapshot.resources.models.map((m) => m.id);
  for (const id of ids) assert.ok(keys.has(id), id);
  for (const t of plan().state.config.targets) assert.ok(keys.has(t.key), t.key);
  const wild = snapshot.resolveModel('w-x')!.entry.id;
  assert.deepEqual([...keys.keys()].filter((k) => k.includes('#')).sort(), [`${wild}#x`, `${wild}#y`]);
  // A target taken out of the groups is no live key any more.
  const fewer = healthTargets(snapshotOf(YAML.replace(', { model: w-y }', '')));
  assert.ok(!fewer.has(`${wild}#y`));
  assert.ok(fewer.has(`${wild}#x`));
});

test('health targets name the model of each key: a wildcard target its model and upstream model', () => {
  const snapshot = snapshotOf(YAML);
  const targets = healthTargets(snapshot);
  const id = (name: string) => snapshot.resolveModel(name)!.entry.id;
  assert.deepEqual(targets.get(`${id('w-x')}#x`), { model: 'w-*', upstreamModel: 'x', group: false });
  assert.deepEqual(targets.get(id('w-x')), { model: 'w-*', upstreamModel: null, group: false });
  assert.deepEqual(targets.get(id('a')), { model: 'a', upstreamModel: 'up-a', group: false });
  // A group's own key names no target (its members are the targets).
  assert.deepEqual(targets.get(id('outer')), { model: 'outer', upstreamModel: null, group: true });
});

/** The targets of group `g` over models a and b, with `extra` model lines (YAML) and g's target list. */
function targetsOfG(targets: string, extra = ''): readonly GroupTarget[] {
  const snapshot = snapshotOf(`
_format_version: "1"
provider_keys:
  - { display_name: up, provider: openai, api_key: k, api_base: "http://127.0.0.1:1/v1" }
models:
  - { display_name: a, provider: openai, model_name: up-a, provider_key: up }
  - { display_name: b, provider: openai, model_name: up-b, provider_key: up }
${extra}  - display_name: g
    routing: { targets: [ ${targets} ] }
`);
  return groupPlan(snapshot, snapshot.resolveModel('g')!.entry, 0).state.config.targets;
}

test('a model listed at two priorities is one target, in the higher tier', () => {
  const targets = targetsOfG('{ model: a, priority: 0 }, { model: b, priority: 1 }, { model: a, priority: 2, weight: 3 }');
  assert.deepEqual(targets.map((t) => [t.name, t.priority, t.weight]), [['a', 2, 3], ['b', 1, 1]]);
});

test('routing tags: a target keeps its own and inherits those of the nested group entry it is reached through', () => {
  const targets = targetsOfG(
    '{ model: a, tags: [eu] }, { model: inner, tags: [us] }, { model: a, priority: -1, tags: [gdpr] }',
    '  - display_name: inner\n    routing: { targets: [ { model: b, tags: [fast] } ] }\n',
  );
  assert.deepEqual(targets.map((t) => [t.name, t.tags]), [['a', ['eu', 'gdpr']], ['b', ['us', 'fast']]]);
});
