// The benchmark workload: the request bodies every load generator sends and the precomputed
// replies the mock upstream answers with. One module so the mock, the generators and the
// checks agree on sizes and on what a correct reply looks like.

export const CHAT_PATH = '/v1/chat/completions';
export const BENCH_MODEL = 'bench-model';
export const UPSTREAM_MODEL = 'gpt-4o-mini';
/**
 * Non-credential headers every target is sent, as a client would: the observability all-on
 * target copies them into its usage events (`observability.usage_event.request_headers`).
 * Sent to every target so that all of them get the same bytes.
 */
export const CLIENT_HEADERS: Readonly<Record<string, string>> = { 'user-agent': 'tollgate-bench/1', 'x-team': 'bench' };
/** Number of `data:` chunk events in a streamed reply, before the usage chunk and `[DONE]`. */
export const SSE_CHUNK_EVENTS = 24;
/** Every `data:` event of a streamed reply: the chunks, the usage chunk and `[DONE]`. */
export const SSE_TOTAL_EVENTS = SSE_CHUNK_EVENTS + 2;

const MESSAGES = [
  { role: 'system', content: 'You are a concise assistant. Answer in one short paragraph.' },
  {
    role: 'user',
    content:
      'Summarise in two sentences why a reverse proxy in front of several model providers ' +
      'helps a team control spend, keys and latency across services.',
  },
];

/** The ~330 B JSON request (non-streaming). */
export const REQUEST_JSON: string = JSON.stringify({
  model: BENCH_MODEL,
  messages: MESSAGES,
  temperature: 0.2,
  max_tokens: 128,
});

/** The streaming variant of the same request. */
export const REQUEST_SSE: string = JSON.stringify({
  model: BENCH_MODEL,
  messages: MESSAGES,
  temperature: 0.2,
  max_tokens: 128,
  stream: true,
  stream_options: { include_usage: true },
});

const ID = 'chatcmpl-bench0000000000000000000000001';
const CREATED = 1_750_000_000;
const FINGERPRINT = 'fp_bench00001';
const USAGE = {
  prompt_tokens: 41,
  completion_tokens: 42,
  total_tokens: 83,
  prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 },
};
const ANSWER =
  'A gateway gives every service one endpoint and one set of keys, so spend and access are ' +
  'controlled centrally. It also routes around slow or failing providers quickly.';

/** The ~665 B OpenAI `chat.completion` reply. */
export const RESPONSE_JSON: Buffer = Buffer.from(
  JSON.stringify({
    id: ID,
    object: 'chat.completion',
    created: CREATED,
    model: UPSTREAM_MODEL,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: ANSWER, refusal: null },
        logprobs: null,
        finish_reason: 'stop',
      },
    ],
    usage: USAGE,
    service_tier: 'default',
    system_fingerprint: FINGERPRINT,
  }),
);

function chunkEvent(delta: Record<string, unknown>, finish: string | null): string {
  const chunk = {
    id: ID,
    object: 'chat.completion.chunk',
    created: CREATED,
    model: UPSTREAM_MODEL,
    system_fingerprint: FINGERPRINT,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  };
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

function buildSseEvents(): Buffer[] {
  const words = ANSWER.split(' ');
  const events: string[] = [chunkEvent({ role: 'assistant', content: '', refusal: null }, null)];
  // Spread the answer's words over the middle chunks; the last chunk carries finish_reason.
  const middle = SSE_CHUNK_EVENTS - 2;
  const per = Math.ceil(words.length / middle);
  for (let i = 0; i < middle; i++) {
    const text = words.slice(i * per, (i + 1) * per).join(' ');
    events.push(chunkEvent({ content: i === 0 ? text : ` ${text}` }, null));
  }
  events.push(chunkEvent({}, 'stop'));
  const usageChunk = {
    id: ID,
    object: 'chat.completion.chunk',
    created: CREATED,
    model: UPSTREAM_MODEL,
    system_fingerprint: FINGERPRINT,
    choices: [],
    usage: USAGE,
  };
  events.push(`data: ${JSON.stringify(usageChunk)}\n\n`);
  events.push('data: [DONE]\n\n');
  return events.map((e) => Buffer.from(e));
}

/** The streamed reply, one Buffer per SSE event, in order. */
export const RESPONSE_SSE_EVENTS: readonly Buffer[] = buildSseEvents();

const STREAM_TRUE = /"stream"\s*:\s*true/;

/** Whether a request body asks for a streamed reply (cheap: no JSON parse). */
export function wantsStream(body: string): boolean {
  return STREAM_TRUE.test(body);
}

/** What a client saw, checked against the workload: null when correct, else why not. */
export function checkReply(stream: boolean, status: number, body: string): string | null {
  if (status !== 200) return `status ${status}: ${body.slice(0, 300)}`;
  if (!stream) {
    let parsed: { object?: unknown; choices?: unknown };
    try {
      parsed = JSON.parse(body) as { object?: unknown; choices?: unknown };
    } catch {
      return `reply is not JSON: ${body.slice(0, 300)}`;
    }
    if (parsed.object !== 'chat.completion') return `reply object is ${String(parsed.object)}`;
    return null;
  }
  const events = body.split('\n\n').filter((e) => e.startsWith('data:'));
  if (events.length !== SSE_TOTAL_EVENTS) {
    return `stream has ${events.length} data events, expected ${SSE_TOTAL_EVENTS}`;
  }
  if (events[events.length - 1] !== 'data: [DONE]') return 'stream does not end with [DONE]';
  return null;
}
