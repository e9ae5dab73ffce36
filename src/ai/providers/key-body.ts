// A provider key's request body options (`request.param_renames`, `request.param_constraints`,
// `request.default_body_fields`, `response.content_list_to_string`), compiled once per snapshot
// and applied to the upstream body every adapter built, on every AI endpoint. They run after the
// adapter, so they have the last word over its built-in changes, in this order: renames, the
// temperature clamp, the default fields, then content flattening.
//
// The body they shape is the attempt's own top-level copy, but its nested values (messages and
// their content) are still the caller's, which a later attempt on another target reads again:
// nested values are replaced, never changed in place.

type Json = Record<string, unknown>;

/** The body options of one provider key; `undefined` when it has none (the common case). */
export interface BodyShaping {
  readonly renames: ReadonlyArray<readonly [string, string]>;
  readonly temperatureMin: number | undefined;
  readonly temperatureMax: number | undefined;
  readonly defaults: ReadonlyArray<readonly [string, unknown]>;
  readonly contentListToString: boolean;
}

export interface BodyOptionsInput {
  param_renames?: Readonly<Record<string, string>>;
  param_constraints?: { temperature_min?: number; temperature_max?: number };
  default_body_fields?: Readonly<Record<string, unknown>>;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

export function compileBodyShaping(request: BodyOptionsInput | undefined, contentListToString: boolean | undefined): BodyShaping | undefined {
  const renames = Object.entries(request?.param_renames ?? {}).filter(([from, to]) => from !== to);
  const c = request?.param_constraints;
  // Values are shared by every request of the snapshot: frozen, so no code path can change one.
  const defaults = Object.entries(request?.default_body_fields ?? {}).map(([k, v]) => [k, deepFreeze(structuredClone(v))] as const);
  const shaping: BodyShaping = {
    renames,
    temperatureMin: c?.temperature_min,
    temperatureMax: c?.temperature_max,
    defaults,
    contentListToString: contentListToString === true,
  };
  const none = renames.length === 0 && shaping.temperatureMin === undefined && shaping.temperatureMax === undefined
    && defaults.length === 0 && !shaping.contentListToString;
  return none ? undefined : shaping;
}

/** Apply a key's body options to `body` (the attempt's own top-level copy) and return it. */
export function shapeRequestBody(body: Json, s: BodyShaping): Json {
  for (const [from, to] of s.renames) {
    if (from in body) {
      body[to] = body[from];
      delete body[from];
    }
  }
  const t = body.temperature;
  if (typeof t === 'number') {
    if (s.temperatureMax !== undefined && t > s.temperatureMax) body.temperature = s.temperatureMax;
    else if (s.temperatureMin !== undefined && t < s.temperatureMin) body.temperature = s.temperatureMin;
  }
  for (const [name, value] of s.defaults) {
    if (body[name] === undefined) body[name] = value;
  }
  if (s.contentListToString && Array.isArray(body.messages)) body.messages = flattenContentLists(body.messages);
  return body;
}

/**
 * `messages[].content` lists made only of text parts become the concatenation of their texts (no
 * separator). A list with any other part (an image, a tool result) is left as it is: flattening
 * it would silently drop that part.
 */
function flattenContentLists(messages: unknown[]): unknown[] {
  let out: unknown[] | undefined;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (m === null || typeof m !== 'object' || !Array.isArray((m as Json).content)) continue;
    const text = textOnly((m as Json).content as unknown[]);
    if (text === undefined) continue;
    out ??= messages.slice();
    out[i] = { ...(m as Json), content: text };
  }
  return out ?? messages;
}

function textOnly(parts: unknown[]): string | undefined {
  if (parts.length === 0) return undefined;
  let text = '';
  for (const p of parts) {
    if (p === null || typeof p !== 'object') return undefined;
    const part = p as Json;
    if (part.type !== 'text' || typeof part.text !== 'string') return undefined;
    text += part.text;
  }
  return text;
}
