import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { TSchema } from '@sinclair/typebox';
import { ConfigSchema } from './schema.ts';

function leafPaths(schema: TSchema, prefix = ''): string[] {
  return Object.entries(schema.properties as Record<string, TSchema>).flatMap(([key, child]) =>
    child.type === 'object' ? leafPaths(child, `${prefix}${key}.`) : [`${prefix}${key}`],
  );
}

test('every config key is documented in docs/configuration.md with its default', () => {
  const docs = readFileSync(resolve(import.meta.dirname, '../../docs/configuration.md'), 'utf8');
  const paths = leafPaths(ConfigSchema);
  assert.ok(paths.length >= 18);
  for (const path of paths) {
    const row = docs.split('\n').find((line) => line.startsWith(`| \`${path}\` |`));
    assert.ok(row, `docs/configuration.md has no table row for ${path}`);
    const leaf = path.split('.').reduce<TSchema>((s, k) => (s.properties as Record<string, TSchema>)[k], ConfigSchema);
    if (leaf.default !== undefined) {
      const shown = Array.isArray(leaf.default) ? `[${leaf.default.join(', ')}]` : String(leaf.default);
      assert.ok(row.includes(`\`${shown}\``), `the ${path} row should show its default \`${shown}\``);
    }
  }
});

/** Optional paths: unset means "none", so they have no default. */
const NO_DEFAULT = new Set([
  'resources_file',
  'observability.usage_event.file',
  'ratelimit.redis.master_name',
  'ratelimit.redis.username',
  'ratelimit.redis.password',
]);

test('every section is closed and defaults to {}; every key but the optional paths has a default', () => {
  const walk = (schema: TSchema, path: string) => {
    assert.equal(schema.additionalProperties, false, `${path || '(root)'} must be closed`);
    for (const [key, child] of Object.entries(schema.properties as Record<string, TSchema>)) {
      const p = path ? `${path}.${key}` : key;
      if (NO_DEFAULT.has(p)) {
        assert.equal(child.default, undefined);
        continue;
      }
      assert.notEqual(child.default, undefined, `${p} needs a default`);
      if (child.type === 'object') {
        assert.deepEqual(child.default, {}, `${p} must default to {}`);
        walk(child, p);
      }
    }
  };
  walk(ConfigSchema, '');
});
