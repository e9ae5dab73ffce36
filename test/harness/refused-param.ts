// Unit-test helper for the request parsers of the model endpoints: the `param` a body is refused
// with (a 400 GatewayError naming the field), failing the test when the body is accepted.
import assert from 'node:assert/strict';
import { GatewayError } from '../../src/lib/errors.ts';

export function refusedParam(parse: (raw: Buffer) => unknown, body: unknown): string | null {
  try {
    parse(Buffer.from(JSON.stringify(body)));
  } catch (e) {
    assert.ok(e instanceof GatewayError, String(e));
    assert.equal(e.status, 400);
    return e.param;
  }
  assert.fail(`accepted ${JSON.stringify(body)}`);
}
