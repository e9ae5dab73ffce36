// E2E helpers for the model endpoints: a JSON POST with a caller key, and the 400s a list of
// bodies gets (each naming its field in `param`, in the OpenAI envelope).
import assert from 'node:assert/strict';
import { rawRequest, type RawResponse } from './echo-upstream.ts';

export function postJson(baseUrl: string, path: string, key: string, body: unknown, headers: Record<string, string> = {}): Promise<RawResponse> {
  return rawRequest(baseUrl, {
    method: 'POST',
    path,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

/** Each body is refused with a 400 `invalid_request_error` naming its field. */
export async function assertRefusedFields(post: (body: unknown) => Promise<RawResponse>, cases: ReadonlyArray<readonly [unknown, string]>): Promise<void> {
  for (const [body, param] of cases) {
    const res = await post(body);
    assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
    const err = JSON.parse(res.text).error;
    assert.equal(err.type, 'invalid_request_error', JSON.stringify(body));
    assert.equal(err.param, param, JSON.stringify(body));
  }
}
