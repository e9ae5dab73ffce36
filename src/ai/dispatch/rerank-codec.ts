// The caller codec for rerank (`/v1/rerank`): JSON only, with the input tokens whichever usage
// field the vendor reports (Cohere's answer names no model and reports none).
import { rerankUsage } from '../protocols/rerank.ts';
import { jsonOnlyCodec } from './json-only-codec.ts';
import { parseObject } from './codecs.ts';

export const rerankCodec = jsonOnlyCodec('rerank', (text) => {
  const answer = parseObject(text);
  return answer === undefined ? undefined : rerankUsage(answer);
});
