// The published JSON Schema files (`schemas/resources/<kind>.schema.json`), rendered from the
// TypeBox schemas. scripts/generate-schemas.ts writes them; a test fails when the committed
// files drift from what this renders.

import { KINDS } from './kinds.ts';

export const SCHEMA_DIR = 'schemas/resources';
const DRAFT = 'http://json-schema.org/draft-07/schema#';

/** File name (relative to SCHEMA_DIR) → file content: pretty JSON with a trailing newline. */
export function renderSchemaFiles(): Map<string, string> {
  const files = new Map<string, string>();
  for (const spec of Object.values(KINDS)) {
    const doc = { $schema: DRAFT, ...spec.schema };
    files.set(`${spec.schemaName}.schema.json`, JSON.stringify(doc, null, 2) + '\n');
  }
  return files;
}
