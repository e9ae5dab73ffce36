import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { parseTarget } from './ab.ts';

const repo = resolve(import.meta.dirname, '..');

test('parseTarget: a config, an optional tree, then node flags and environment variables', () => {
  assert.deepEqual(parseTarget('minimal'), { label: 'minimal', config: null, repo, nodeFlags: [], env: {} });
  assert.deepEqual(parseTarget('obs-full@/tmp/base --max-semi-space-size=8 TOLLGATE_OBSERVABILITY__ACCESS_LOG=false A=b=c'), {
    label: 'obs-full@/tmp/base --max-semi-space-size=8 TOLLGATE_OBSERVABILITY__ACCESS_LOG=false A=b=c',
    config: 'obs-full',
    repo: '/tmp/base',
    nodeFlags: ['--max-semi-space-size=8'],
    env: { TOLLGATE_OBSERVABILITY__ACCESS_LOG: 'false', A: 'b=c' },
  });
  assert.throws(() => parseTarget('nginx'), /expected minimal or one of tollgate, obs-full, obs-off/);
  assert.throws(() => parseTarget('tollgate stray'), /"stray" is neither a node flag nor NAME=value/);
});
