// Caller codecs for the endpoints that answer JSON only (embeddings, rerank, image generation): the
// OpenAI error envelope and the native answer with the caller's alias where it names a model. They
// have no stream form and no translation: a target that cannot serve one is refused before any
// call (`not_implemented`), and the built-in mock's answers are read as an upstream's, so the
// stream, canonical and rendering members are never called.
import type { CanonicalUsage } from '../protocols/canonical.ts';
import { openAIErrorBody, openAIStreamErrorFrame } from '../protocols/openai-chat.ts';
import type { WireProtocol } from '../providers/contract.ts';
import { spliceModel, type CallerCodec } from './codecs.ts';

function noStreamForm(): never {
  throw new Error('a JSON-only endpoint has no stream form and is never translated');
}

/** `usage`: the usage an answer reports, read from its text. */
export function jsonOnlyCodec(protocol: WireProtocol, usage: (answer: string) => CanonicalUsage | undefined): CallerCodec {
  return {
    protocol,
    requestIdHeader: 'x-request-id',
    errorBody: openAIErrorBody,
    streamErrorFrame: openAIStreamErrorFrame,
    toCanonical: noStreamForm,
    renderJson: noStreamForm,
    createEncoder: noStreamForm,
    nativeJson(text, alias) {
      const body = spliceModel(text, alias);
      return body === undefined ? undefined : { body, usage: usage(text) };
    },
    createNativeRelay: noStreamForm,
    answerAsStream: () => undefined,
  };
}
