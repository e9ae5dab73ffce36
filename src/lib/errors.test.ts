import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ERROR_CODES, GatewayError, type ErrorCode } from './errors.ts';

const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');

test('every error code is documented in docs/errors.md with its status', () => {
  for (const [code, spec] of Object.entries(ERROR_CODES)) {
    const row = doc.split('\n').find((l) => l.startsWith(`| \`${code}\` |`));
    assert.ok(row, `docs/errors.md has no row for ${code}`);
    assert.ok(row.includes(String(spec.status)), `docs/errors.md row for ${code} does not state status ${spec.status}`);
    assert.ok(row.includes(spec.type), `docs/errors.md row for ${code} does not state type ${spec.type}`);
  }
});

test('GatewayError takes status and type from the catalogue unless overridden', () => {
  const e = new GatewayError('model_not_found' as ErrorCode, 'nope');
  assert.equal(e.status, 404);
  assert.equal(e.type, 'invalid_request_error');
  assert.equal(e.publicCode, 'model_not_found');
  const o = new GatewayError('upstream_error', 'x', { status: 418, type: 'teapot', publicCode: null });
  assert.equal(o.status, 418);
  assert.equal(o.type, 'teapot');
  assert.equal(o.publicCode, null);
});

test('unexposed errors hide their message', () => {
  assert.equal(new GatewayError('internal_error', 'secret detail').publicMessage, 'internal gateway error');
});
