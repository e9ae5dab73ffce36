// The built-in `mock` provider: answers in-process and deterministically, in the OpenAI wire
// format, so a fresh gateway can be demoed, smoke-checked and load-tested without network.
// The reply echoes the last user message; token counts are estimated (4 characters a token).
import type { Adapter, LocalReply } from '../contract.ts';

function text(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((p) => {
        // Caller JSON: only a string is text (String() of an object can throw).
        const t = p !== null && typeof p === 'object' && (p as Record<string, unknown>).type === 'text' ? (p as Record<string, unknown>).text : undefined;
        return typeof t === 'string' ? t : '';
      })
      .join('');
  }
  return '';
}

function estimateTokens(s: string): number {
  return Math.max(1, Math.ceil(s.length / 4));
}

export function mockReplyText(messages: unknown): string {
  const list = Array.isArray(messages) ? (messages as Record<string, unknown>[]) : [];
  for (let i = list.length - 1; i >= 0; i--) {
    if (list[i]?.role === 'user') {
      const said = text(list[i].content).trim();
      if (said !== '') return `Mock reply from Tollgate. You said: ${said.slice(0, 2000)}`;
    }
  }
  return 'Mock reply from Tollgate.';
}

function chat(body: Record<string, unknown>, upstreamModel: string): LocalReply {
  const reply = mockReplyText(body.messages);
  const promptText = (Array.isArray(body.messages) ? (body.messages as Record<string, unknown>[]) : []).map((m) => text(m.content)).join('\n');
  const usage = {
    prompt_tokens: estimateTokens(promptText),
    completion_tokens: estimateTokens(reply),
    total_tokens: estimateTokens(promptText) + estimateTokens(reply),
  };
  const id = 'chatcmpl-mock';
  const created = Math.floor(Date.now() / 1000);
  if (body.stream !== true) {
    return {
      kind: 'json',
      body: {
        id,
        object: 'chat.completion',
        created,
        model: upstreamModel,
        choices: [{ index: 0, message: { role: 'assistant', content: reply, refusal: null }, logprobs: null, finish_reason: 'stop' }],
        usage,
        system_fingerprint: 'tollgate-mock',
      },
    };
  }
  const base = { id, object: 'chat.completion.chunk', created, model: upstreamModel, system_fingerprint: 'tollgate-mock' };
  const words = reply.split(/(?<= )/);
  const chunks: Record<string, unknown>[] = [
    { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }] },
    ...words.map((w) => ({ ...base, choices: [{ index: 0, delta: { content: w }, logprobs: null, finish_reason: null }] })),
    { ...base, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }] },
  ];
  const so = body.stream_options as Record<string, unknown> | undefined;
  if (so?.include_usage === true) chunks.push({ ...base, choices: [], usage });
  return { kind: 'sse', chunks };
}

export const mockAdapter: Adapter = {
  id: 'mock',
  speaks: ['openai-chat'],
  framing: 'sse',
  endpoint: () => ({ url: 'mock://local', headers: {} }),
  prepareRequest: (_op, body, target) => ({ ...body, model: target.upstreamModel }),
  classifyError: () => ({ errorClass: 'upstream_status', retryable: false, retryAfterMs: undefined, message: undefined, type: undefined, code: undefined, param: undefined }),
  local: { chat },
};
