// Caller codecs for the endpoints with no stream form and no translation (embeddings, rerank, image
// generation; speech, whose audio is relayed as bytes, uses only the envelope): the OpenAI error
// envelope and the native JSON answer with the caller's alias where it names a model. A target
// that cannot serve one is refused before any call (`not_implemented`), and the built-in mock's
// answers are read as an upstream's, so the stream, canonical and rendering members are never called.
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
