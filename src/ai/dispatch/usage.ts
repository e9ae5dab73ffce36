// Canonical usage onto the request context (what finalize reports).
import type { RequestContext } from '../../http/context.ts';
import type { CanonicalUsage } from '../protocols/canonical.ts';
import { tokenCount } from '../../lib/token-count.ts';

/**
 * The upstream's usage report, as far as it holds usable counts (a bad count is not reported;
 * a report that is not an object is none). Upstream JSON is untrusted: `u` may be anything.
 */
export function recordUsage(ctx: RequestContext, u: CanonicalUsage | null | undefined): void {
  if (u === null || typeof u !== 'object') return;
  const prompt = u.prompt_tokens_details;
  const completion = u.completion_tokens_details;
  ctx.usage = {
    promptTokens: tokenCount(u.prompt_tokens),
    completionTokens: tokenCount(u.completion_tokens),
    totalTokens: tokenCount(u.total_tokens),
    cachedTokens: tokenCount(prompt?.cached_tokens),
    cacheCreationTokens: tokenCount(prompt?.cache_creation_tokens),
    reasoningTokens: tokenCount(completion?.reasoning_tokens),
  };
}
