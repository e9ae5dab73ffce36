// POST /v1/images/generations: OpenAI image generation. Native only, and only for keys labelled
// `openai` (and the built-in mock): another target answers 501 not_implemented; model groups pass
// such targets over.
import type { RequestContext } from '../../http/context.ts';
import type { ApiKeyEntry } from '../../snapshot/snapshot.ts';
import { parseImagesRequest, type ImagesRequest } from '../protocols/openai-images.ts';
import { openAIImagesCodec } from '../dispatch/images-codec.ts';
import type { CallerRequest } from '../dispatch/attempt.ts';
import type { ProxyOptions } from '../proxy.ts';
import { serveParsed } from './serve.ts';

function imagesCall(request: ImagesRequest, key: ApiKeyEntry): CallerRequest {
  return { codec: openAIImagesCodec, operation: 'images', body: request, alias: request.model, stream: false, wantUsage: false, apiKey: key };
}

export function imageGenerations(ctx: RequestContext, options: ProxyOptions): Promise<void> {
  return serveParsed(ctx, options, parseImagesRequest, imagesCall);
}
