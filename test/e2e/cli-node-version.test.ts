// E2E: the launcher's Node.js version check (bin/node-version.js).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { MIN_NODE_MAJOR, nodeVersionProblem } from '../../bin/node-version.js';

test('the launcher refuses a Node.js older than the engines field, saying how to run it instead', () => {
  assert.match(nodeVersionProblem('v20.20.2') ?? '', /needs Node\.js 24 or later, and this is v20\.20\.2\. .*npm start -- <options>.*npx tollgate/);
  assert.notEqual(nodeVersionProblem('v23.11.0'), undefined);
  assert.equal(nodeVersionProblem('v24.0.0'), undefined);
  assert.equal(nodeVersionProblem('v25.1.0'), undefined);
  assert.equal(nodeVersionProblem(process.version), undefined, 'the pinned Node.js runs it');
  const engines = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).engines.node;
  assert.equal(engines, `>=${MIN_NODE_MAJOR}`, 'one minimum, the engines field');
});

test('under the pinned Node.js the launcher passes its check and runs the CLI', () => {
  const out = execFileSync(process.execPath, [new URL('../../bin/tollgate.js', import.meta.url).pathname, '--help'], { encoding: 'utf8' });
  assert.match(out, /tollgate/);
});
