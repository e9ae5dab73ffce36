// The caller codec for Anthropic Messages (`/v1/messages`, `/v1/messages/count_tokens`): the
// Anthropic error envelope, the bridge to and from canonical chat, and the native relay.
import { anthropicErrorBody, anthropicStreamErrorFrame, scanMessagesUsage, type MessagesRequest } from '../protocols/anthropic-messages.ts';
import { AnthropicMessagesStreamRelay } from '../protocols/anthropic-messages-stream.ts';
import { chatResponseToMessages, messagesRequestToChat } from '../protocols/anthropic-bridge.ts';
import { ChatToMessagesStream } from '../protocols/anthropic-bridge-stream.ts';
import type { CanonicalUsage } from '../protocols/canonical.ts';
import { messageAsEvents } from '../protocols/anthropic-messages-as-stream.ts';
import { parseObject, spliceModel, type CallerCodec, type NativeRelay } from './codecs.ts';

const MESSAGE_STOP = 'event: message_stop\ndata: {"type":"message_stop"}\n\n';

class MessagesNativeRelay implements NativeRelay {
  private readonly relay: AnthropicMessagesStreamRelay;

  constructor(alias: string) {
    this.relay = new AnthropicMessagesStreamRelay(alias);
  }

  line(line: string): string {
    return this.relay.line(line);
  }

  finish(): { text: string; complete: boolean } {
    if (this.relay.sawStop) return { text: '', complete: true };
    // The final message_delta arrived but not message_stop: complete the stream for the caller.
    return this.relay.sawStopReason ? { text: MESSAGE_STOP, complete: true } : { text: '', complete: false };
  }

  get usage(): CanonicalUsage | undefined {
    return this.relay.usage;
  }

  get inBandError(): boolean {
    return this.relay.inBandError !== undefined;
  }
}

export const anthropicMessagesCodec: CallerCodec = {
  protocol: 'anthropic-messages',
  requestIdHeader: 'request-id',
  errorBody: anthropicErrorBody,
  streamErrorFrame: anthropicStreamErrorFrame,
  toCanonical: (request) => messagesRequestToChat(request as MessagesRequest),
  renderJson: (canonical, alias) => JSON.stringify(chatResponseToMessages(canonical, alias)),
  createEncoder: (alias) => new ChatToMessagesStream(alias),
  nativeJson(text, alias) {
    const body = spliceModel(text, alias);
    return body === undefined ? undefined : { body, usage: scanMessagesUsage(text) };
  },
  createNativeRelay: (alias) => new MessagesNativeRelay(alias),
  answerAsStream(body) {
    const message = parseObject(body);
    return message === undefined ? undefined : messageAsEvents(message);
  },
};
