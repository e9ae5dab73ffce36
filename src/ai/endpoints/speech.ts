// POST /v1/audio/speech: OpenAI text to speech. Native only, the audio relayed as it arrives; a
// target whose adapter has no speech endpoint answers 501 not_implemented.
import type { RequestContext } from '../../http/context.ts';
import type { ApiKeyEntry } from '../../snapshot/snapshot.ts';
import { parseSpeechRequest, type SpeechRequest } from '../protocols/openai-speech.ts';
import { openAISpeechCodec } from '../dispatch/speech-codec.ts';
import type { CallerRequest } from '../dispatch/attempt.ts';
import type { ProxyOptions } from '../proxy.ts';
import { serveParsed } from './serve.ts';

function speechCall(request: SpeechRequest, key: ApiKeyEntry): CallerRequest {
  return { codec: openAISpeechCodec, operation: 'speech', body: request, alias: request.model, stream: false, wantUsage: false, apiKey: key };
}

export function speech(ctx: RequestContext, options: ProxyOptions): Promise<void> {
  return serveParsed(ctx, options, parseSpeechRequest, speechCall);
}
