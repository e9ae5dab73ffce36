// Canonical usage onto the request context (what finalize reports).
import type { RequestContext } from '../../http/context.ts';
import type { CanonicalUsage } from '../protocols/canonical.ts';

export function recordUsage(ctx: RequestContext, u: CanonicalUsage | undefined): void {
  if (u === undefined) return;
  ctx.usage = {
    promptTokens: u.prompt_tokens,
    completionTokens: u.completion_tokens,
    totalTokens: u.total_tokens,
    cachedTokens: u.prompt_tokens_details?.cached_tokens,
    cacheCreationTokens: u.prompt_tokens_details?.cache_creation_tokens,
    reasoningTokens: u.completion_tokens_details?.reasoning_tokens,
  };
}
