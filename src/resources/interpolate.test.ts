import { test } from 'node:test';
import assert from 'node:assert/strict';
import { interpolateString, interpolateTree } from './interpolate.ts';

const env = { HOST: 'api.example.com', KEY: 'sk-secret', EMPTY: '', DOLLAR: 'a${B}c' };

test('${VAR} is replaced, also inside a longer string', () => {
  assert.deepEqual(interpolateString('${KEY}', env), { value: 'sk-secret', errors: [] });
  assert.deepEqual(interpolateString('https://${HOST}/v1', env), { value: 'https://api.example.com/v1', errors: [] });
  assert.deepEqual(interpolateString('${HOST}${HOST}', env), { value: 'api.example.comapi.example.com', errors: [] });
});

test('$$ is a literal $, bare $VAR and a lone $ are untouched', () => {
  assert.equal(interpolateString('price: $$5', env).value, 'price: $5');
  assert.equal(interpolateString('$${HOST}', env).value, '${HOST}');
  assert.equal(interpolateString('$HOST and $', env).value, '$HOST and $');
  assert.equal(interpolateString('a$b', env).value, 'a$b');
});

test('a substituted value is not interpolated again', () => {
  assert.deepEqual(interpolateString('${DOLLAR}', env), { value: 'a${B}c', errors: [] });
});

test('a missing or empty variable is an error naming the variable, never a value', () => {
  assert.deepEqual(interpolateString('x-${NOPE}', env).errors, ['environment variable NOPE is not set']);
  assert.deepEqual(interpolateString('${EMPTY}', env).errors, ['environment variable EMPTY is empty']);
});

test('unterminated ${, empty ${} and invalid names are errors', () => {
  assert.deepEqual(interpolateString('abc ${HOST', env).errors, ['unterminated "${" at character 5']);
  assert.deepEqual(interpolateString('${}', env).errors, ['empty "${}"']);
  assert.match(interpolateString('${A-B}', env).errors[0], /^invalid environment variable name in the "\$\{\.\.\.\}" at character 1 /);
  assert.match(interpolateString('x ${1A}', env).errors[0], /^invalid environment variable name in the "\$\{\.\.\.\}" at character 3 /);
});

test('an invalid reference is never echoed: it may hold a credential', () => {
  const [error] = interpolateString('${OPENAI_API_KEY:-sk-DEFAULT-SECRET}', env).errors;
  assert.ok(!error.includes('sk-DEFAULT-SECRET'), error);
});

test('each value put into the string is reported with its variable', () => {
  const seen: string[] = [];
  interpolateString('${HOST}:${PORT}', { HOST: 'example.com', PORT: '443' }, (name, value) => seen.push(`${name}=${value}`));
  assert.deepEqual(seen, ['HOST=example.com', 'PORT=443']);
});

test('every error in a string is reported', () => {
  assert.deepEqual(interpolateString('${A}/${B}', {}).errors, [
    'environment variable A is not set',
    'environment variable B is not set',
  ]);
});

test('interpolateTree rewrites string values only, never keys or other scalars, and reports paths', () => {
  const tree = { '${HOST}': '${HOST}', list: ['${KEY}', 5, true, null, '${NOPE}'], nested: { n: 1 } };
  const errors: unknown[] = [];
  interpolateTree(tree, env, [], (path, message) => errors.push([path, message]));
  assert.deepEqual(tree, { '${HOST}': 'api.example.com', list: ['sk-secret', 5, true, null, '${NOPE}'], nested: { n: 1 } });
  assert.deepEqual(errors, [[['list', 4], 'environment variable NOPE is not set']]);
});
