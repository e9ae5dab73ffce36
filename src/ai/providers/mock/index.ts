// The built-in `mock` provider: answers in-process and deterministically, in the OpenAI wire
// format, so a fresh gateway can be demoed, smoke-checked and load-tested without network.
// The reply echoes the last user message; token counts are estimated (4 characters a token).
// Embeddings are unit vectors derived from each input's text; a (legacy) completion echoes its
// prompt; rerank scores documents by the query words they hold; an image is one pixel; speech is
// silence.
import { GatewayError } from '../../../lib/errors.ts';
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

/** The inputs of an embeddings request as texts (token ids as their decimal text). */
function embeddingInputs(input: unknown): string[] {
  if (typeof input === 'string') return [input];
  if (!Array.isArray(input)) return [];
  if (input.every((n) => typeof n === 'number')) return [input.join(' ')];
  return input.map((item) => (typeof item === 'string' ? item : Array.isArray(item) ? item.join(' ') : ''));
}

/** A unit vector derived from the text alone (FNV-1a seeded sine), so equal inputs embed equally. */
function mockVector(text: string, dimensions: number): number[] {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  const v: number[] = [];
  let norm = 0;
  for (let i = 0; i < dimensions; i++) {
    const x = Math.sin(h + i * 7919);
    v.push(x);
    norm += x * x;
  }
  const scale = norm > 0 ? 1 / Math.sqrt(norm) : 0;
  return v.map((x) => Math.fround(x * scale));
}

/** Float32 little-endian bytes in base64: OpenAI's `encoding_format: "base64"`. */
function base64Floats(v: number[]): string {
  const bytes = Buffer.alloc(v.length * 4);
  v.forEach((x, i) => bytes.writeFloatLE(x, i * 4));
  return bytes.toString('base64');
}

export const MOCK_EMBEDDING_DIMENSIONS = 16;
/** OpenAI's own caps: inputs per request, and the widest vector it offers. */
export const MOCK_MAX_INPUTS = 2048;
export const MOCK_MAX_DIMENSIONS = 3072;
/**
 * Numbers in one answer: the answer is built on the event loop, so a small request for thousands
 * of wide vectors must not stall the gateway (or build a string over V8's limit).
 */
export const MOCK_MAX_NUMBERS = 262_144;

function refuse(message: string, param: string): never {
  throw new GatewayError('invalid_request', `mock provider: ${message}`, { param, publicCode: null });
}

function embeddings(body: Record<string, unknown>, upstreamModel: string): Record<string, unknown> {
  const inputs = embeddingInputs(body.input);
  if (inputs.length > MOCK_MAX_INPUTS) refuse(`at most ${MOCK_MAX_INPUTS} inputs in one request`, 'input');
  const d = body.dimensions;
  if (d !== undefined && d !== null && (typeof d !== 'number' || !Number.isInteger(d) || d < 1 || d > MOCK_MAX_DIMENSIONS)) refuse(`'dimensions' must be an integer from 1 to ${MOCK_MAX_DIMENSIONS}`, 'dimensions');
  const dims = (d as number | null | undefined) ?? MOCK_EMBEDDING_DIMENSIONS;
  if (inputs.length * dims > MOCK_MAX_NUMBERS) refuse(`at most ${MOCK_MAX_NUMBERS} numbers in one answer (inputs × dimensions)`, 'input');
  const format = body.encoding_format;
  if (format !== undefined && format !== null && format !== 'float' && format !== 'base64') refuse("'encoding_format' must be 'float' or 'base64'", 'encoding_format');
  const tokens = inputs.reduce((n, s) => n + estimateTokens(s), 0);
  return {
    object: 'list',
    data: inputs.map((s, index) => {
      const v = mockVector(s, dims);
      return { object: 'embedding', index, embedding: format === 'base64' ? base64Floats(v) : v };
    }),
    model: upstreamModel,
    usage: { prompt_tokens: tokens, total_tokens: tokens },
  };
}

/** A completions prompt as text (token ids as their decimal text); the first of a list. */
function promptText(prompt: unknown): string {
  if (typeof prompt === 'string') return prompt;
  if (!Array.isArray(prompt) || prompt.length === 0) return '';
  if (prompt.every((n) => typeof n === 'number')) return prompt.join(' ');
  const first: unknown = prompt[0];
  return typeof first === 'string' ? first : Array.isArray(first) ? first.join(' ') : '';
}

function completions(body: Record<string, unknown>, upstreamModel: string): LocalReply {
  const prompt = promptText(body.prompt);
  const said = prompt.trim();
  const reply = said === '' ? 'Mock completion from Tollgate.' : `Mock completion from Tollgate. You said: ${said.slice(0, 2000)}`;
  const usage = { prompt_tokens: estimateTokens(prompt), completion_tokens: estimateTokens(reply), total_tokens: estimateTokens(prompt) + estimateTokens(reply) };
  const base = { id: 'cmpl-mock', object: 'text_completion', created: Math.floor(Date.now() / 1000), model: upstreamModel, system_fingerprint: 'tollgate-mock' };
  if (body.stream !== true) {
    return { kind: 'json', body: { ...base, choices: [{ index: 0, text: reply, logprobs: null, finish_reason: 'stop' }], usage } };
  }
  const chunks: Record<string, unknown>[] = [
    ...reply.split(/(?<= )/).map((w) => ({ ...base, choices: [{ index: 0, text: w, logprobs: null, finish_reason: null }] })),
    { ...base, choices: [{ index: 0, text: '', logprobs: null, finish_reason: 'stop' }] },
  ];
  const so = body.stream_options as Record<string, unknown> | undefined;
  if (so?.include_usage === true) chunks.push({ ...base, choices: [], usage });
  return { kind: 'sse', chunks };
}

/** The text of a rerank document: itself, or an object's `text`. */
function documentText(d: unknown): string {
  if (typeof d === 'string') return d;
  const t = d !== null && typeof d === 'object' ? (d as Record<string, unknown>).text : undefined;
  return typeof t === 'string' ? t : '';
}

/** Rerank by the share of the query's words a document holds: deterministic, best first. */
function rerank(body: Record<string, unknown>, upstreamModel: string): Record<string, unknown> {
  const words = (s: string): string[] => s.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((w) => w !== '');
  const query = new Set(words(documentText(body.query)));
  const docs = Array.isArray(body.documents) ? body.documents : [];
  const scored = docs.map((d, index) => {
    const own = new Set(words(documentText(d)));
    let shared = 0;
    for (const w of query) if (own.has(w)) shared++;
    return { index, relevance_score: query.size === 0 ? 0 : shared / query.size };
  });
  scored.sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index);
  const topN = typeof body.top_n === 'number' && body.top_n > 0 ? body.top_n : scored.length;
  const tokens = estimateTokens(documentText(body.query)) + docs.reduce((n: number, d) => n + estimateTokens(documentText(d)), 0);
  return { model: upstreamModel, results: scored.slice(0, topN), usage: { prompt_tokens: tokens, total_tokens: tokens } };
}

/** A 1×1 PNG: every image the mock generates. */
export const MOCK_IMAGE_PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
/** OpenAI's cap on images per request. */
export const MOCK_MAX_IMAGES = 10;

/** `n` images of one pixel each, as base64 or (`response_format: url`) as a data URL, with gpt-image-style usage. */
function images(body: Record<string, unknown>, upstreamModel: string): Record<string, unknown> {
  const n = body.n ?? 1;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MOCK_MAX_IMAGES) refuse(`'n' must be an integer from 1 to ${MOCK_MAX_IMAGES}`, 'n');
  const prompt = typeof body.prompt === 'string' ? body.prompt : '';
  const image = body.response_format === 'url' ? { url: `data:image/png;base64,${MOCK_IMAGE_PNG_BASE64}` } : { b64_json: MOCK_IMAGE_PNG_BASE64 };
  const input = estimateTokens(prompt);
  return {
    created: Math.floor(Date.now() / 1000),
    data: Array.from({ length: n }, () => ({ ...image })),
    usage: { input_tokens: input, output_tokens: n, total_tokens: input + n },
    model: upstreamModel,
  };
}

/** Longest mock speech: 10 s of 8 kHz 8-bit silence (80 KB). */
const MOCK_SPEECH_MAX_SECONDS = 10;

/** Speech as a WAV of silence, 50 ms a character of input up to 10 s (whatever `response_format` asked). */
function speech(body: Record<string, unknown>): { contentType: string; audio: Buffer } {
  const chars = typeof body.input === 'string' ? body.input.length : 0;
  const samples = Math.round(8000 * Math.min(MOCK_SPEECH_MAX_SECONDS, Math.max(0.05, chars * 0.05)));
  const wav = Buffer.alloc(44 + samples, 128);
  wav.write('RIFF', 0, 'latin1');
  wav.writeUInt32LE(36 + samples, 4);
  wav.write('WAVEfmt ', 8, 'latin1');
  wav.writeUInt32LE(16, 16); // fmt chunk size
  wav.writeUInt16LE(1, 20); // PCM
  wav.writeUInt16LE(1, 22); // mono
  wav.writeUInt32LE(8000, 24); // sample rate
  wav.writeUInt32LE(8000, 28); // byte rate
  wav.writeUInt16LE(1, 32); // block align
  wav.writeUInt16LE(8, 34); // bits per sample
  wav.write('data', 36, 'latin1');
  wav.writeUInt32LE(samples, 40);
  return { contentType: 'audio/wav', audio: wav };
}

export const mockAdapter: Adapter = {
  id: 'mock',
  speaks: ['openai-chat', 'openai-embeddings', 'openai-completions', 'rerank', 'openai-images', 'openai-speech'],
  framing: 'sse',
  endpoint: () => ({ url: 'mock://local', headers: {} }),
  prepareRequest: (_op, body, target) => ({ ...body, model: target.upstreamModel }),
  classifyError: () => ({ errorClass: 'upstream_status', retryable: false, retryAfterMs: undefined, message: undefined, type: undefined, code: undefined, param: undefined }),
  local: { chat, embeddings, completions, rerank, images, speech },
};
