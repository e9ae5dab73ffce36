import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isoTime, isoTimeMs } from './iso-time.ts';

test('isoTime writes what Date#toISOString writes, across minutes, hours, days, years and back in time', () => {
  const starts = [0, 59_999, 60_000, Date.UTC(2026, 10, 22, 23, 59, 59, 999), Date.UTC(2024, 1, 29, 12, 0, 0, 5), Date.UTC(9999, 11, 31, 23, 59, 59, 0)];
  for (const start of starts) {
    for (const step of [0, 1, 9, 10, 99, 100, 999, 1000, 59_000, 59_999, 60_000, 3_600_000, 86_400_000, -1, -60_001]) {
      const ms = start + step;
      if (ms < 0 || ms >= 253402300800000) continue;
      assert.equal(isoTime(ms), new Date(ms).toISOString(), String(ms));
    }
  }
  let seed = 7;
  for (let i = 0; i < 20000; i++) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    const ms = Date.UTC(2026, 0, 1) + (seed % 200_000_000);
    assert.equal(isoTime(ms), new Date(ms).toISOString(), String(ms));
  }
  assert.equal(isoTime(1.5), new Date(1.5).toISOString(), 'a fraction of a millisecond is the formatter\'s');
  // Also inside the minute formatted last, and right after the same millisecond's text.
  assert.equal(isoTime(1), new Date(1).toISOString());
  assert.equal(isoTime(1.5), new Date(1.5).toISOString(), 'a fraction of a millisecond, in the cached minute');
  assert.equal(isoTime(1), isoTime(1));
  assert.equal(isoTimeMs(isoTime(1)), 1);
  const now = isoTime();
  assert.match(now, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.ok(Math.abs(Date.parse(now) - Date.now()) < 1000);
});

test('isoTimeMs reads back what isoTime wrote, and any other text as Date.parse does', () => {
  let seed = 11;
  for (let i = 0; i < 20000; i++) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    const ms = Date.UTC(2026, 0, 1) + (seed % 200_000_000);
    const text = isoTime(ms);
    assert.equal(isoTimeMs(text), ms, text);
    assert.equal(isoTimeMs(isoTime(ms + 59_999)), Date.parse(isoTime(ms + 59_999)));
  }
  const inMinute = isoTime(Date.UTC(2026, 10, 22, 4, 5, 6, 789));
  for (const other of [
    inMinute.replace('06.789', '6x.789'), inMinute.replace('06.789', '06.7x9'), inMinute.replace('06.789', '61.789'),
    inMinute.replace('.789Z', '.789+01:00'), inMinute.replace('Z', 'z'), inMinute.slice(0, 19), '2026-11-22T04:05:07.001Z', 'not a time',
  ]) {
    assert.deepEqual(isoTimeMs(other), Date.parse(other), other);
  }
});
