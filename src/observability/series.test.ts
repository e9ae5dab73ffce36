import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Counter, Gauge, Histogram, Registry, type RegistryContentType } from 'prom-client';
import { SeriesCounter, SeriesHistogram } from './series.ts';

const LABELS = ['route', 'model', 'status'];
const BUCKETS = [0.005, 0.1, 0.25, 1, 2.5, 60];

/** One registry on prom-client's classes and one on ours, each with a prom-client gauge alongside. */
function pair() {
  const prom = new Registry<RegistryContentType>();
  const ours = new Registry<RegistryContentType>();
  for (const registers of [[prom], [ours]]) new Gauge({ name: 'in_flight', help: 'A gauge that stays on prom-client.', registers }).set(3);
  return {
    prom,
    ours,
    promCounter: new Counter({ name: 'requests_total', help: 'Requests.', labelNames: LABELS, registers: [prom] }),
    ourCounter: new SeriesCounter({ name: 'requests_total', help: 'Requests.', labelNames: LABELS, registers: [ours] }),
    promHistogram: new Histogram({ name: 'duration_seconds', help: 'Durations "quoted" \\ and\nsplit.', labelNames: LABELS, buckets: BUCKETS, registers: [prom] }),
    ourHistogram: new SeriesHistogram({ name: 'duration_seconds', help: 'Durations "quoted" \\ and\nsplit.', labelNames: LABELS, buckets: BUCKETS, registers: [ours] }),
  };
}

async function assertSameExposition(prom: Registry<RegistryContentType>, ours: Registry<RegistryContentType>): Promise<string> {
  const text = await ours.metrics();
  assert.equal(text, await prom.metrics());
  assert.equal(JSON.stringify(await ours.getMetricsAsJSON()), JSON.stringify(await prom.getMetricsAsJSON()));
  prom.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
  ours.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
  assert.equal(await ours.metrics(), await prom.metrics());
  prom.setContentType(Registry.PROMETHEUS_CONTENT_TYPE);
  ours.setContentType(Registry.PROMETHEUS_CONTENT_TYPE);
  return text;
}

// Label objects in several key orders, a label left out, values that need escaping.
const SETS: Record<string, string>[] = [
  { route: '/v1/chat', model: 'fast', status: '200' },
  { status: '429', route: '/v1/chat', model: 'fast' },
  { model: 'slow', route: 'a"b\\c\nd', status: '500' },
  { route: '/v1/messages', model: 'fast' },
];
// On a bound, between bounds, below the first, above the last, zero, fractions that do not sum exactly.
const VALUES = [0.005, 0.1, 0.0001, 61, 0, 0.3, 0.7, 2.5, 1e-9, 0.1 + 0.2, 59.999, 123456.789];

test('a counter renders exactly as prom-client does, next to prom-client metrics', async () => {
  const p = pair();
  for (let i = 0; i < 40; i++) {
    const labels = SETS[(i * 7) % SETS.length];
    const v = i % 5 === 0 ? 0 : i % 3 === 0 ? 0.25 * i : 1;
    p.promCounter.inc(labels, v);
    if (i % 2 === 0) p.ourCounter.child(labels).inc(v);
    else p.ourCounter.inc(labels, v);
  }
  p.promCounter.labels(SETS[0]).inc();
  p.ourCounter.child(SETS[0]).inc();
  const text = await assertSameExposition(p.prom, p.ours);
  assert.match(text, /^requests_total\{status="429",route="\/v1\/chat",model="fast"\} /m, 'labels print in the key order first given');
  assert.match(text, /^in_flight 3$/m);
});

test('a histogram renders exactly as prom-client does: cumulative buckets with le first, +Inf, sum, count', async () => {
  const p = pair();
  for (let i = 0; i < 60; i++) {
    const labels = SETS[(i * 5) % SETS.length];
    const v = VALUES[i % VALUES.length];
    p.promHistogram.observe(labels, v);
    if (i % 2 === 0) p.ourHistogram.child(labels).observe(v);
    else p.ourHistogram.observe(labels, v);
  }
  const text = await assertSameExposition(p.prom, p.ours);
  assert.match(text, /^duration_seconds_bucket\{le="\+Inf",route="\/v1\/chat",model="fast",status="200"\} \d+$/m);
  assert.match(text, /^duration_seconds_sum\{route="\/v1\/chat",model="fast",status="200"\} /m);
});

test("a histogram without buckets uses prom-client's default ones", async () => {
  const prom = new Registry<RegistryContentType>();
  const ours = new Registry<RegistryContentType>();
  const h = new Histogram({ name: 'h', help: 'h', labelNames: ['a'], registers: [prom] });
  const s = new SeriesHistogram({ name: 'h', help: 'h', labelNames: ['a'], registers: [ours] });
  for (const v of VALUES) {
    h.observe({ a: 'x' }, v);
    s.child({ a: 'x' }).observe(v);
  }
  assert.match(await assertSameExposition(prom, ours), /le="2\.5"/);
});

test('a series is absent until its first update, even when its child was made', async () => {
  const p = pair();
  const idle = p.ourHistogram.child({ route: 'idle', model: 'm', status: '200' });
  const idleCount = p.ourCounter.child({ route: 'idle', model: 'm', status: '200' });
  let text = await p.ours.metrics();
  assert.doesNotMatch(text, /idle/);
  assert.match(text, /# TYPE requests_total counter\n\n# HELP duration_seconds .*\n# TYPE duration_seconds histogram\n$/, 'the families print their headers only');
  idleCount.inc(0);
  idle.observe(0.2);
  text = await p.ours.metrics();
  assert.match(text, /^requests_total\{route="idle",model="m",status="200"\} 0$/m, 'an increment by zero shows the series, as in prom-client');
  assert.match(text, /^duration_seconds_count\{route="idle",model="m",status="200"\} 1$/m);
});

test('series print in first-update order, not child-creation order', async () => {
  const p = pair();
  const [a, b] = [SETS[0], SETS[2]];
  const childA = p.ourHistogram.child(a);
  p.ourHistogram.child(b).observe(1);
  childA.observe(1);
  p.promHistogram.observe(b, 1);
  p.promHistogram.observe(a, 1);
  await assertSameExposition(p.prom, p.ours);
});

test('the same label values give the same child, whatever the key order or caller', async () => {
  const c = new SeriesCounter({ name: 'c_total', help: 'c', labelNames: ['a', 'b'] });
  const one = c.child({ a: '1', b: '2' });
  assert.equal(c.child({ b: '2', a: '1' }), one);
  assert.notEqual(c.child({ a: '1', b: '3' }), one);
  assert.notEqual(c.child({ a: '1' }), one, 'a label left out is another series');
  assert.notEqual(c.child({ a: '1', b: '' }), c.child({ a: '1' }), 'an empty value is not an absent label');
  assert.notEqual(c.child({ a: '12', b: '3' }), c.child({ a: '1', b: '23' }), 'values do not run into each other');
  one.inc(2);
  c.inc({ b: '2', a: '1' }, 3);
  const values = (await c.get()).values;
  assert.deepEqual(values, [{ value: 5, labels: { a: '1', b: '2' } }]);
  const h = new SeriesHistogram({ name: 'h', help: 'h', labelNames: ['a'], buckets: [1] });
  assert.equal(h.child({ a: 'x' }), h.child({ a: 'x' }));
});

test('reset empties every family; children handed out before keep recording', async () => {
  const p = pair();
  const promChild = p.promHistogram.labels(SETS[0]);
  const ourChild = p.ourHistogram.child(SETS[0]);
  const ourCount = p.ourCounter.child(SETS[1]);
  for (const v of VALUES) {
    promChild.observe(v);
    ourChild.observe(v);
  }
  p.promCounter.inc(SETS[1], 4);
  ourCount.inc(4);
  p.prom.resetMetrics();
  p.ours.resetMetrics();
  const text = await assertSameExposition(p.prom, p.ours);
  assert.doesNotMatch(text, /duration_seconds_bucket|requests_total\{/);
  promChild.observe(0.2);
  ourChild.observe(0.2);
  p.promCounter.inc(SETS[1]);
  ourCount.inc();
  assert.match(await assertSameExposition(p.prom, p.ours), /^duration_seconds_count\{route="\/v1\/chat",model="fast",status="200"\} 1$/m);
});

test('labels, names, buckets and values are validated', () => {
  const c = new SeriesCounter({ name: 'c_total', help: 'c', labelNames: ['a'] });
  assert.throws(() => c.child({ a: 'x', bogus: 'y' }), /Added label "bogus" is not included in initial labelset/);
  assert.throws(() => c.inc({ bogus: 'y' }), /Added label "bogus"/);
  assert.throws(() => c.child({ a: 'x' }).inc(-1), /not possible to decrease a counter/);
  assert.throws(() => c.child({ a: 'x' }).inc(Number.NaN), TypeError);
  assert.throws(() => c.child({ a: 'x' }).inc(Infinity), TypeError);
  assert.throws(() => new SeriesCounter({ name: 'no-dash', help: 'c', labelNames: ['a'] }), /Invalid metric name/);
  assert.throws(() => new SeriesCounter({ name: 'c2', help: 'c', labelNames: ['1a'] }), /invalid label name/);
  assert.throws(() => new SeriesCounter({ name: 'c3', help: 'c', labelNames: [] }), /at least one label name/);
  assert.throws(() => new SeriesCounter({ name: 'c4', help: '', labelNames: ['a'] }), /help/);
  assert.throws(() => new SeriesHistogram({ name: 'h', help: 'h', labelNames: ['le'] }), /le is a reserved label/);
  assert.throws(() => new SeriesHistogram({ name: 'h', help: 'h', labelNames: ['a'], buckets: [1, 1] }), /strictly ascending/);
  assert.throws(() => new SeriesHistogram({ name: 'h', help: 'h', labelNames: ['a'], buckets: [1, Infinity] }), /finite/);
  const h = new SeriesHistogram({ name: 'h', help: 'h', labelNames: ['a'], buckets: [1] });
  assert.throws(() => h.child({ a: 'x' }).observe(Number.NaN), /Value is not a valid number/);
  const r = new Registry();
  new SeriesCounter({ name: 'dup_total', help: 'd', labelNames: ['a'], registers: [r] });
  assert.throws(() => new Counter({ name: 'dup_total', help: 'd', registers: [r] }), /already been registered/);
});
