// The OpenAI (legacy) Completions wire format (POST /v1/completions), the one code-completion
// tools use for fill-in-the-middle (`prompt` + `suffix`): the request checks the gateway makes
// before any provider call, and a whole `text_completion` as the chunks of its stream (for an
// upstream that answered a stream request with JSON). The body is forwarded as sent (model
// replaced), so fields the gateway does not check (`suffix`, `echo`, `logprobs`, vendor extras)
// reach the upstream as is.
import { invalid, parseOpenAIBody } from './openai-chat.ts';
import { textInputError } from './openai-text-input.ts';

type Obj = Record<string, unknown>;

export interface CompletionsRequest extends Obj {
  model: string;
  prompt: string | string[] | number[] | number[][];
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
}

/** Parse and check a completions body. Throws a 400 GatewayError naming the field. */
export function parseCompletionsRequest(raw: Buffer): CompletionsRequest {
  const req = parseOpenAIBody(raw);
  const problem = textInputError(req.prompt, 'prompt');
  if (problem !== undefined) throw invalid(problem, 'prompt');
  // OpenAI takes null for both, as for any optional field (an SDK sends it for an explicit None).
  if (req.stream !== undefined && req.stream !== null && typeof req.stream !== 'boolean') throw invalid("'stream' must be a boolean", 'stream');
  const so = req.stream_options;
  if (so !== undefined && so !== null && (typeof so !== 'object' || Array.isArray(so))) throw invalid("'stream_options' must be an object", 'stream_options');
  return req as CompletionsRequest;
}

const CARRIED = ['id', 'created', 'model', 'system_fingerprint'] as const;

const isObject = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * The stream chunks of a whole `text_completion`: one chunk with every choice's text, one with
 * their finish reasons, then the usage-only chunk when it has usage. Undefined when it is not a
 * completion (no `choices` list).
 */
export function textCompletionAsChunks(completion: Obj): Obj[] | undefined {
  if (!Array.isArray(completion.choices)) return undefined;
  const base: Obj = { object: 'text_completion' };
  for (const name of CARRIED) if (completion[name] !== undefined) base[name] = completion[name];
  const texts: Obj[] = [];
  const finishes: Obj[] = [];
  completion.choices.forEach((choice: unknown, i: number) => {
    if (!isObject(choice)) return;
    const index = typeof choice.index === 'number' ? choice.index : i;
    texts.push({ ...choice, index, text: typeof choice.text === 'string' ? choice.text : '', finish_reason: null });
    finishes.push({ index, text: '', logprobs: null, finish_reason: typeof choice.finish_reason === 'string' ? choice.finish_reason : 'stop' });
  });
  const chunks: Obj[] = [{ ...base, choices: texts }, { ...base, choices: finishes }];
  if (isObject(completion.usage)) chunks.push({ ...base, choices: [], usage: completion.usage });
  return chunks;
}
