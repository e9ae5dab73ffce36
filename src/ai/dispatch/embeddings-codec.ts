// The caller codec for OpenAI Embeddings (`/v1/embeddings`): the OpenAI error envelope and the
// native JSON answer with the caller's alias. Embeddings have no stream form and no translation:
// a target whose adapter does not speak them is refused before any call (`not_implemented`).
import { openAIErrorBody, openAIStreamErrorFrame, scanUsage } from '../protocols/openai-chat.ts';
import { spliceModel, type CallerCodec } from './codecs.ts';

function noStreamForm(): never {
  throw new Error('embeddings have no stream form and are never translated');
}

export const openAIEmbeddingsCodec: CallerCodec = {
  protocol: 'openai-embeddings',
  requestIdHeader: 'x-request-id',
  errorBody: openAIErrorBody,
  streamErrorFrame: openAIStreamErrorFrame,
  toCanonical: noStreamForm,
  // The built-in mock's answer is already an embeddings object.
  renderJson: (answer, alias) => JSON.stringify({ ...answer, model: alias }),
  createEncoder: noStreamForm,
  nativeJson(text, alias) {
    const body = spliceModel(text, alias);
    return body === undefined ? undefined : { body, usage: scanUsage(text) };
  },
  createNativeRelay: noStreamForm,
  answerAsStream: () => undefined,
};
