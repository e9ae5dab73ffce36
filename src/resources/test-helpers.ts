// Helpers for the resources unit tests: build a file from a JS object and assert on the
// outcome of a load with readable failure messages.

import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import { loadResourcesText, type LoadResult } from './loader.ts';
import type { Resources } from './types.ts';
import type { Env } from './interpolate.ts';

/** A minimal valid provider key, named `pk`. */
export const PK = { display_name: 'pk', provider: 'openai', api_key: 'sk-test' };

/** Load `{ _format_version: "1", ...body }` rendered as YAML. */
export function loadObj(body: Record<string, unknown>, env: Env = {}): LoadResult {
  return loadResourcesText(stringify({ _format_version: '1', ...body }), env);
}

export function expectOk(r: LoadResult): Resources {
  if (!r.ok) assert.fail(`expected the load to succeed, got:\n  ${r.errors.join('\n  ')}`);
  return r.resources;
}

export function expectErrors(r: LoadResult): string[] {
  if (r.ok) assert.fail('expected the load to fail, it succeeded');
  return r.errors;
}

/** Assert that one error equals `expected` (string) or matches it (RegExp). */
export function assertError(errors: string[], expected: string | RegExp): void {
  const hit = errors.some((e) => (typeof expected === 'string' ? e === expected : expected.test(e)));
  if (!hit) assert.fail(`no error ${String(expected)} among:\n  ${errors.join('\n  ')}`);
}

/** Load and expect exactly these errors (order-insensitive). */
export function assertErrors(r: LoadResult, expected: string[]): void {
  assert.deepEqual([...expectErrors(r)].sort(), [...expected].sort());
}
