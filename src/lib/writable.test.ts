import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkWritable } from './writable.ts';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-writable-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('a path that cannot be opened for appending is named with the reason', () => {
  const problem = checkWritable(join(dir, 'missing-dir', 'x.ndjson'));
  assert.match(problem ?? '', /missing-dir.*ENOENT/);
});

test('a writable path passes and is not created by the check', () => {
  const path = join(dir, 'usage.ndjson');
  assert.equal(checkWritable(path), undefined);
  assert.equal(existsSync(path), false);
});

test('a directory is not a file to append to', () => {
  assert.match(checkWritable(dir) ?? '', /EISDIR/);
});
