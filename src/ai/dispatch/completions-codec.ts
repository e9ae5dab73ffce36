// The caller codec for OpenAI (legacy) Completions (`/v1/completions`): the OpenAI error envelope,
// the native JSON answer and stream relay with the caller's alias (the chat relay: a completions
// stream has the same frame, `choices`, `finish_reason` and usage shape; its completeness judged
// per choice), and a whole answer as a stream. Completions are never translated: a target whose adapter does not speak them is refused
// before any call (`not_implemented`).
import { openAIErrorBody, openAIStreamErrorFrame, scanUsage } from '../protocols/openai-chat.ts';
import { OpenAIChatStreamEncoder } from '../protocols/openai-chat-stream.ts';
import { textCompletionAsChunks } from '../protocols/openai-completions.ts';
import { openAINativeRelay, openAIStreamText, parseObject, spliceModel, type CallerCodec } from './codecs.ts';

export const openAICompletionsCodec: CallerCodec = {
  protocol: 'openai-completions',
  requestIdHeader: 'x-request-id',
  errorBody: openAIErrorBody,
  streamErrorFrame: openAIStreamErrorFrame,
  toCanonical: () => {
    throw new Error('completions are never translated');
  },
  // The built-in mock's answers are already completions objects and chunks.
  renderJson: (answer, alias) => JSON.stringify({ ...answer, model: alias }),
  createEncoder: (alias, wantUsage) => new OpenAIChatStreamEncoder(alias, wantUsage),
  nativeJson(text, alias) {
    const body = spliceModel(text, alias);
    return body === undefined ? undefined : { body, usage: scanUsage(text) };
  },
  createNativeRelay: (alias, dropUsage, upstream) => openAINativeRelay(alias, dropUsage, upstream, true),
  answerAsStream(body, alias, wantUsage) {
    const completion = parseObject(body);
    const chunks = completion === undefined ? undefined : textCompletionAsChunks(completion);
    return chunks === undefined ? undefined : openAIStreamText(chunks, alias, wantUsage);
  },
};
