// The caller codec for OpenAI image generation (`/v1/images/generations`): JSON only, with the
// tokens gpt-image models report.
import { imagesUsage } from '../protocols/openai-images.ts';
import { jsonOnlyCodec } from './json-only-codec.ts';
import { parseObject } from './codecs.ts';

export const openAIImagesCodec = jsonOnlyCodec('openai-images', (text) => {
  const answer = parseObject(text);
  return answer === undefined ? undefined : imagesUsage(answer);
});
