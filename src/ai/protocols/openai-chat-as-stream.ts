// A complete `chat.completion` as the `chat.completion.chunk` objects a stream of it would have
// carried: for a caller that asked for a stream when the upstream answered with one JSON document.
// Each choice's whole message goes in one delta (role, content, tool calls with their index), the
// finish reasons follow in their own chunk, then the usage-only chunk (`choices: []`) when the
// answer had usage; the caller's encoder decides whether that one is sent.

type Obj = Record<string, unknown>;

const isObject = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Members a chunk repeats from the completion (model is the encoder's to set). */
const CARRIED = ['id', 'created', 'model', 'system_fingerprint', 'service_tier'] as const;

/** The chunks of `completion`, or undefined when it is not a completion (no `choices` list). */
export function completionAsChunks(completion: Obj): Obj[] | undefined {
  if (!Array.isArray(completion.choices)) return undefined;
  const base: Obj = { object: 'chat.completion.chunk' };
  for (const name of CARRIED) if (completion[name] !== undefined) base[name] = completion[name];
  const deltas: Obj[] = [];
  const finishes: Obj[] = [];
  completion.choices.forEach((choice: unknown, i: number) => {
    if (!isObject(choice)) return;
    const index = typeof choice.index === 'number' ? choice.index : i;
    deltas.push({ index, delta: delta(isObject(choice.message) ? choice.message : {}), logprobs: choice.logprobs ?? null, finish_reason: null });
    finishes.push({ index, delta: {}, logprobs: null, finish_reason: typeof choice.finish_reason === 'string' ? choice.finish_reason : 'stop' });
  });
  const chunks: Obj[] = [{ ...base, choices: deltas }, { ...base, choices: finishes }];
  if (isObject(completion.usage)) chunks.push({ ...base, choices: [], usage: completion.usage });
  return chunks;
}

/** A message as one delta: every member kept (vendor extras too), tool calls numbered as streams number them. */
function delta(message: Obj): Obj {
  const out: Obj = { ...message, role: typeof message.role === 'string' ? message.role : 'assistant' };
  if (Array.isArray(message.tool_calls)) out.tool_calls = message.tool_calls.map((tc: unknown, index: number) => (isObject(tc) ? { index, ...tc } : tc));
  return out;
}
