import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseSoakArgs, SOAK_DEFAULTS, soakVerdict } from './soak.ts';

test('parseSoakArgs: defaults, overrides, and refusals', () => {
  assert.deepEqual(parseSoakArgs([]), SOAK_DEFAULTS);
  assert.deepEqual(parseSoakArgs(['--secs', '30', '--margin-mib', '8']), { ...SOAK_DEFAULTS, secs: 30, marginMiB: 8 });
  assert.throws(() => parseSoakArgs(['--nope', '1']), /unknown option --nope/);
  assert.throws(() => parseSoakArgs(['--secs', '0']), /positive number/);
  assert.throws(() => parseSoakArgs(['--secs']), /positive number/);
});

test('soakVerdict judges the after-load RSS against the warm level, not the boot level', () => {
  const MiB = 2 ** 20;
  assert.deepEqual(soakVerdict({ boot: 100 * MiB, warm: 130 * MiB, peak: 150 * MiB, after: 140 * MiB }, 16), { returned: true, growthMiB: 10 });
  assert.deepEqual(soakVerdict({ boot: 100 * MiB, warm: 130 * MiB, peak: 200 * MiB, after: 170 * MiB }, 16), { returned: false, growthMiB: 40 });
  assert.equal(soakVerdict({ boot: 0, warm: 130 * MiB, peak: 0, after: 120 * MiB }, 16).returned, true);
});
