// E2E: the serving process runs one full garbage collection when boot is done
// (src/lib/collect-garbage.ts), so V8 collects its old generation from the first requests on
// instead of letting promoted garbage pile up until a start-up default trigger. Read from the
// process's own GC metric: an idle gateway that just booted has run no collection by itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway } from '../harness/spawn.ts';

test('a started gateway has run a full collection by the time it is ready, with no load', async (t) => {
  const gw = await startGateway({
    config: { proxy: { addr: '127.0.0.1:0' }, observability: { metrics: { prometheus: { addr: '127.0.0.1:0' } } } },
    resources: { _format_version: '1', provider_keys: [{ display_name: 'm', provider: 'mock', api_key: 'x' }] },
  });
  t.after(() => gw.stop());
  // GC entries reach the metric's observer asynchronously, shortly after the collection.
  let majors = 0;
  for (const deadline = Date.now() + 2000; majors === 0 && Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
    const text = await (await fetch(`${gw.metricsUrl}/metrics`)).text();
    majors = Number(/^tollgate_nodejs_gc_duration_seconds_count\{kind="major"\} (\d+)$/m.exec(text)?.[1] ?? 0);
  }
  assert.ok(majors >= 1, 'the serving process ran a mark-compact at boot');
});
