// Usage of a buffered (non-event-stream) response, by request shape (spec 3 §6 table): the
// response's top-level `usage` for chat, responses and completions; input tokens for rerank;
// the native-envelope arithmetic; nothing for any other body. Only the members needed are
// parsed, not the whole body.
import { findTopLevelMember } from '../lib/json-scan.ts';
import type { RequestShape } from './request-shape.ts';
import { nativeTokenCounts, readTokenCounts, rerankTokenCounts, type TokenCounts } from './token-counts.ts';

function member(text: string, key: string): unknown {
  const span = findTopLevelMember(text, key);
  if (span === undefined || text.charCodeAt(span.start) !== 123) return undefined;
  try {
    return JSON.parse(text.slice(span.start, span.end));
  } catch {
    return undefined;
  }
}

export function bufferedTokenCounts(shape: RequestShape, text: string): TokenCounts | undefined {
  switch (shape) {
    case 'chat':
    case 'responses':
    case 'completions':
      return readTokenCounts(member(text, 'usage'));
    case 'rerank':
      return rerankTokenCounts({ usage: member(text, 'usage'), meta: member(text, 'meta') });
    case 'native':
      return nativeTokenCounts({ usage: member(text, 'usage') });
    case 'opaque':
      return undefined;
  }
}
