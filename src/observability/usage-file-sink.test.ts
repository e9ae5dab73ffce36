import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import type { UsageEvent } from './usage-events.ts';
import { FileUsageSink } from './usage-file-sink.ts';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-usage-file-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const BASE: UsageEvent = {
  type: 'usage', occurred_at: '2026-11-22T01:02:03.456Z', request_id: '', operation: 'chat', requested_model: 'fast', model_id: 'm-1',
  provider: 'openai', provider_key_id: 'pk-1', api_key_id: 'k-1', status: 200, status_code: 200, error_class: null, error_message: null,
  attempt_kind: 'initial', billable: true, stream: false, prompt_tokens: 1, completion_tokens: 2, total_tokens: 3, cached_tokens: null,
  cache_creation_tokens: null, reasoning_tokens: null, latency_ms: 1.5, ttft_ms: 1, passthrough_route_name: null, client_identity: null,
};
const event = (id: string): UsageEvent => ({ ...BASE, request_id: id });

test('events are appended as NDJSON, batched until the timer or close flushes them', async () => {
  const path = join(dir, 'a.ndjson');
  const sink = new FileUsageSink(path, { flushMs: 60_000 });
  sink.emit(event('r1'));
  sink.emit(event('r2'));
  assert.equal(readFileSync(path, 'utf8'), '', 'nothing written on the request path');
  await sink.close();
  const lines = readFileSync(path, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(lines.map((l) => l.request_id), ['r1', 'r2']);
});

test('the timer flushes a partial batch; an existing file is appended to', async () => {
  const path = join(dir, 'a.ndjson');
  const sink = new FileUsageSink(path, { flushMs: 20 });
  sink.emit(event('r3'));
  await new Promise((r) => setTimeout(r, 120));
  assert.match(readFileSync(path, 'utf8'), /"r3"/);
  await sink.close();
  assert.equal(readFileSync(path, 'utf8').trimEnd().split('\n').length, 3);
});

test('beyond the backlog bound lines are dropped and reported', async () => {
  const rejected: Array<[string, number]> = [];
  // Each line is a batch of its own and the first one's write is still in flight: the second
  // fills the backlog, the rest are dropped.
  const one = Buffer.byteLength(JSON.stringify(event('r0')) + '\n');
  const sink = new FileUsageSink(join(dir, 'b.ndjson'), { flushMs: 60_000, batchBytes: 1, maxBacklogBytes: 2 * one, onReject: (r, n) => rejected.push([r, n]) });
  for (let i = 0; i < 10; i++) sink.emit(event(`r${i}`));
  assert.deepEqual(rejected, Array.from({ length: 8 }, () => ['backlog_full', 1]));
  await sink.close();
  assert.deepEqual(readFileSync(join(dir, 'b.ndjson'), 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l).request_id), ['r0', 'r1']);
});

test('events after close are not written, not even to a file that took over the descriptor number', async () => {
  const path = join(dir, 'c.ndjson');
  const sink = new FileUsageSink(path, { flushMs: 60_000 });
  sink.emit(event('before'));
  await sink.close();
  const otherPath = join(dir, 'other.txt');
  const other = openSync(otherPath, 'w'); // most likely the number the sink's file had
  sink.emit(event('after'));
  sink.flush();
  await new Promise((r) => setTimeout(r, 50));
  closeSync(other);
  assert.equal(readFileSync(otherPath, 'utf8'), '');
  assert.deepEqual(readFileSync(path, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l).request_id), ['before']);
});

test('a path that cannot be opened throws when the sink is made', () => {
  assert.throws(() => new FileUsageSink(join(dir, 'missing-dir', 'x.ndjson')));
});

test('an exit without close (a second shutdown signal) still writes the queued events', () => {
  const path = join(dir, 'exit.ndjson');
  const sink = new URL('./usage-file-sink.ts', import.meta.url).href;
  const script = `import { FileUsageSink } from ${JSON.stringify(sink)};
const s = new FileUsageSink(${JSON.stringify(path)}, { flushMs: 60_000 });
for (let i = 0; i < 5; i++) s.emit({ ...${JSON.stringify(BASE)}, request_id: 'x' + i });
process.exit(1);`;
  assert.throws(() => execFileSync(process.execPath, ['--input-type=module', '-e', script], { stdio: 'pipe' }));
  const ids = readFileSync(path, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l).request_id);
  assert.deepEqual(ids, ['x0', 'x1', 'x2', 'x3', 'x4']);
});
