// A complete Messages response as the event stream that would have carried it: for a caller that
// asked for a stream when the upstream answered with one JSON message. message_start (no content,
// no stop reason yet), each content block as content_block_start / _delta / _stop, then
// message_delta with the stop reason and usage, and message_stop. Text, thinking (with its
// signature) and tool input go as deltas, as Anthropic streams them; any other block (redacted
// thinking, server tool results) is whole in its content_block_start.

type Obj = Record<string, unknown>;

const isObject = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

function frame(event: string, data: Obj): string {
  return `event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`;
}

/** The event stream of `message`, or undefined when it is not a Messages response. */
export function messageAsEvents(message: Obj): string | undefined {
  if (!Array.isArray(message.content) || (message.type !== undefined && message.type !== 'message')) return undefined;
  const usage = isObject(message.usage) ? message.usage : {};
  let out = frame('message_start', {
    message: { ...message, type: 'message', content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 0 } },
  });
  message.content.forEach((block: unknown, index: number) => {
    if (isObject(block)) out += blockEvents(block, index);
  });
  out += frame('message_delta', { delta: { stop_reason: message.stop_reason ?? 'end_turn', stop_sequence: message.stop_sequence ?? null }, usage });
  return out + frame('message_stop', {});
}

function blockEvents(block: Obj, index: number): string {
  const deltas: Obj[] = [];
  let start: Obj = block;
  if (block.type === 'text' && typeof block.text === 'string') {
    start = { ...block, text: '' };
    deltas.push({ type: 'text_delta', text: block.text });
  } else if (block.type === 'thinking' && typeof block.thinking === 'string') {
    start = { ...block, thinking: '', signature: '' };
    deltas.push({ type: 'thinking_delta', thinking: block.thinking });
    if (typeof block.signature === 'string' && block.signature !== '') deltas.push({ type: 'signature_delta', signature: block.signature });
  } else if ((block.type === 'tool_use' || block.type === 'server_tool_use' || block.type === 'mcp_tool_use') && isObject(block.input)) {
    start = { ...block, input: {} };
    deltas.push({ type: 'input_json_delta', partial_json: JSON.stringify(block.input) });
  }
  let out = frame('content_block_start', { index, content_block: start });
  for (const delta of deltas) out += frame('content_block_delta', { index, delta });
  return out + frame('content_block_stop', { index });
}
