import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { UsageEvent } from './usage-events.ts';
import { checkWritable, FileUsageSink } from './usage-file-sink.ts';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-usage-file-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const event = (id: string) => ({ type: 'usage', request_id: id, status: 200 }) as unknown as UsageEvent;

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
  const rejected: string[] = [];
  const sink = new FileUsageSink(join(dir, 'b.ndjson'), { flushMs: 60_000, batchBytes: 1 << 30, maxBacklogBytes: 100, onReject: (r) => rejected.push(r) });
  for (let i = 0; i < 10; i++) sink.emit(event(`r${i}`));
  assert.ok(rejected.length > 0 && rejected.every((r) => r === 'backlog_full'));
  await sink.close();
});

test('a path that cannot be opened fails at startup with the path in the message', () => {
  const problem = checkWritable(join(dir, 'missing-dir', 'x.ndjson'));
  assert.match(problem ?? '', /missing-dir.*ENOENT/);
  assert.throws(() => new FileUsageSink(join(dir, 'missing-dir', 'x.ndjson')));
});
