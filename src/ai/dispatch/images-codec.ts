// The caller codec for OpenAI image generation (`/v1/images/generations`): JSON only, with the
// tokens gpt-image models report. An answer can be megabytes of base64: its usage member is found
// by a scan, not a second parse of the whole.
import { imagesUsage } from '../protocols/openai-images.ts';
import { scanUsage } from '../protocols/openai-chat.ts';
import { jsonOnlyCodec } from './json-only-codec.ts';

export const openAIImagesCodec = jsonOnlyCodec('openai-images', (text) => imagesUsage({ usage: scanUsage(text) }));
