import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { SCHEMA_DIR, renderSchemaFiles } from './schema-files.ts';
import { createAjv } from './validator.ts';
import { loadResourcesFile } from './loader.ts';
import { KINDS } from './kinds.ts';

const root = join(import.meta.dirname, '../..');
const dir = join(root, SCHEMA_DIR);

test('committed schemas/resources/*.schema.json match the TypeBox schemas (run `npm run schemas`)', () => {
  const rendered = renderSchemaFiles();
  assert.deepEqual(readdirSync(dir).filter((f) => f.endsWith('.json')).sort(), [...rendered.keys()].sort());
  for (const [name, content] of rendered) {
    assert.equal(readFileSync(join(dir, name), 'utf8'), content, `${SCHEMA_DIR}/${name} is stale; run npm run schemas`);
  }
});

test('the published schemas compile and accept every document the loader produces', () => {
  const example = loadResourcesFile(join(root, 'examples/resources.example.yaml'), {
    OPENAI_API_KEY: 'sk-o', ANTHROPIC_API_KEY: 'sk-a', TEAM_A_KEY: 'k',
  });
  assert.ok(example.ok, !example.ok ? example.errors.join('\n') : '');
  for (const spec of Object.values(KINDS)) {
    const schema = JSON.parse(readFileSync(join(dir, `${spec.schemaName}.schema.json`), 'utf8'));
    const validate = createAjv({ useDefaults: false }).compile(schema);
    const docs = example.resources[spec.collection] as { id: string }[];
    assert.ok(docs.length > 0, `the example should hold a ${spec.label}`);
    for (const { id: _id, ...doc } of docs) {
      assert.ok(validate(doc), `${spec.collection}: ${JSON.stringify(validate.errors)}`);
      // Closed: an unknown field is rejected.
      assert.equal(validate({ ...doc, unknown_field: 1 }), false);
    }
  }
});
