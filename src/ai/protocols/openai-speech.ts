// The OpenAI speech wire format (POST /v1/audio/speech): text in, audio bytes out. The request
// checks the gateway makes before any provider call; the body is forwarded as sent (model
// replaced), so `response_format`, `speed`, `instructions` and `stream_format` reach the upstream.
import { invalid, parseOpenAIBody } from './openai-chat.ts';

export interface SpeechRequest extends Record<string, unknown> {
  model: string;
  input: string;
}

/** Parse and check a speech body. Throws a 400 GatewayError naming the field. */
export function parseSpeechRequest(raw: Buffer): SpeechRequest {
  const req = parseOpenAIBody(raw);
  if (typeof req.input !== 'string' || req.input === '') throw invalid("'input' is required and must be a non-empty string", 'input');
  // A voice is its name, or an object (a custom voice's `{id}`).
  const v = req.voice;
  if (!(typeof v === 'string' && v !== '') && (v === null || typeof v !== 'object' || Array.isArray(v))) throw invalid("'voice' is required and must be a non-empty string or an object", 'voice');
  return req as SpeechRequest;
}
