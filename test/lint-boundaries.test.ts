// The lint config enforces the module boundaries of docs/architecture.md §4: a forbidden import
// is a lint error, an allowed one is not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';

const root = fileURLToPath(new URL('..', import.meta.url));
const eslint = new ESLint({ cwd: root });

async function boundaryErrors(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: `${root}${file}` });
  return result.messages.filter((m) => m.ruleId === 'tollgate/boundaries' || m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

const cases: Array<[file: string, code: string, forbidden: boolean]> = [
  ['src/lib/probe.ts', "import { RequestContext } from '../http/context.ts';\nexport const x = RequestContext;\n", true],
  ['src/lib/probe.ts', "import { compileGlob } from './glob.ts';\nexport const x = compileGlob;\n", false],
  ['src/ai/protocols/probe.ts', "import { sendJson } from '../../http/respond.ts';\nexport const x = sendJson;\n", true],
  ['src/ai/providers/openai/probe.ts', "import { mockAdapter } from '../mock/index.ts';\nexport const x = mockAdapter;\n", true],
  ['src/ai/providers/openai/probe.ts', "import { callUpstream } from '../../../http/upstream.ts';\nexport const x = callUpstream;\n", true],
  ['src/ai/providers/openai/probe.ts', "import { parseChatRequest } from '../../protocols/openai-chat.ts';\nexport const x = parseChatRequest;\n", false],
  ['src/http/probe.ts', "import { SnapshotHolder } from '../snapshot/snapshot.ts';\nexport const x = SnapshotHolder;\n", true],
  ['src/snapshot/probe.ts', "import { sendJson } from '../http/respond.ts';\nexport const x = sendJson;\n", true],
  ['src/resources/probe.ts', "import { RequestContext } from '../http/context.ts';\nexport const x = RequestContext;\n", true],
  ['src/admin/probe.ts', "import { createProxyHandler } from '../ai/proxy.ts';\nexport const x = createProxyHandler;\n", true],
  ['src/ai/probe.ts', "import { buildAdminApp } from '../admin/app.ts';\nexport const x = buildAdminApp;\n", true],
  ['src/ai/probe.ts', "import Fastify from 'fastify';\nexport const x = Fastify;\n", true],
  ['src/ai/probe.ts', "import { SnapshotHolder } from '../snapshot/snapshot.ts';\nexport const x = SnapshotHolder;\n", false],
  ['src/observability/probe.ts', "import http from 'node:http';\nexport const x = http;\n", true],
  ['src/ai/probe.ts', "import { STATUS_CODES } from 'node:http';\nexport const x = STATUS_CODES;\n", true],
  ['src/ai/probe.ts', "import type { IncomingMessage } from 'node:http';\nexport type X = IncomingMessage;\n", false],
  ['src/ai/probe.test.ts', "import http from 'node:http';\nexport const x = http;\n", false],
];

for (const [file, code, forbidden] of cases) {
  const first = code.split('\n')[0];
  test(`${file}: ${first} is ${forbidden ? 'forbidden' : 'allowed'}`, async () => {
    const errors = await boundaryErrors(file, code);
    if (forbidden) assert.ok(errors.length > 0, 'expected a boundary lint error');
    else assert.deepEqual(errors, []);
  });
}
