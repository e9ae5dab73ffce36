// Writes schemas/resources/*.schema.json from the TypeBox resource schemas
// (`npm run schemas`). Run it after changing a schema; a unit test fails until you do.

import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SCHEMA_DIR, renderSchemaFiles } from '../src/resources/schema-files.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dir = join(root, SCHEMA_DIR);
mkdirSync(dir, { recursive: true });
for (const [name, content] of renderSchemaFiles()) {
  writeFileSync(join(dir, name), content);
  console.log(`wrote ${join(SCHEMA_DIR, name)}`);
}
