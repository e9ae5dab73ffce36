// The canonical protocol of the translated path is OpenAI Chat Completions (ARCHITECTURE §6):
// requests, `chat.completion` objects and `chat.completion.chunk` objects in that shape. This
// module holds the canonical usage type every codec converts to and from.

/**
 * Canonical usage: the OpenAI Chat Completions `usage` object. `prompt_tokens` counts every
 * input token (cache reads and cache writes included); `cached_tokens` are cache reads and
 * `cache_creation_tokens` cache writes, both kept as the provider reported them.
 */
export interface CanonicalUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number; cache_creation_tokens?: number };
  completion_tokens_details?: { reasoning_tokens?: number };
}

/** An upstream stream's failure, in the vendor's words. */
export interface StreamError {
  type: string;
  message: string;
  /** The status the upstream's error stands for (lib/in-band-status.ts); 502 when unset. */
  status?: number;
}
