// The caller codec for OpenAI speech (`/v1/audio/speech`): the OpenAI error envelope. Its answers
// are audio, relayed as bytes (relay-bytes.ts), never read as JSON, so it reports no usage.
import { jsonOnlyCodec } from './json-only-codec.ts';

export const openAISpeechCodec = jsonOnlyCodec('openai-speech', () => undefined);
