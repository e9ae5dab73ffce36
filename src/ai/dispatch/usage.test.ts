import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { RequestContext } from '../../http/context.ts';
import type { CanonicalUsage } from '../protocols/canonical.ts';
import { recordUsage } from './usage.ts';

const context = (): RequestContext => new RequestContext({ method: 'POST', headers: {} } as unknown as IncomingMessage, {} as ServerResponse, 'r', '127.0.0.1');

test('an upstream usage report is untrusted: unusable counts are not reported, null is no report', () => {
  const ctx = context();
  recordUsage(ctx, { prompt_tokens: 'a', completion_tokens: -1, total_tokens: 1e400, prompt_tokens_details: 'x', completion_tokens_details: { reasoning_tokens: 3 } } as unknown as CanonicalUsage);
  assert.deepEqual(ctx.usage, { promptTokens: undefined, completionTokens: undefined, totalTokens: undefined, cachedTokens: undefined, cacheCreationTokens: undefined, reasoningTokens: 3 });
  const none = context();
  recordUsage(none, null);
  assert.equal(none.usage, undefined);
});
