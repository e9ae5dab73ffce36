// A 2xx JSON body that is no answer, found before it is relayed or translated: an error envelope
// under a success status (some providers and relays answer a quota or overload error with 200),
// and an OpenAI-family completion without any choice. Either is an attempt failure (502, a model
// group fails over), never a 200 carrying an error or an empty answer.
import { GatewayError } from '../../lib/errors.ts';
import { reportsError } from '../../lib/in-band-status.ts';
import { findTopLevelMember, isJsonSpace } from '../../lib/json-scan.ts';
import type { ClassifiedError } from '../providers/contract.ts';
import { parseObject } from './codecs.ts';
import { withoutKey } from './upstream-errors.ts';

/**
 * The error an upstream put in a 2xx JSON body (`{"error":{...}}`, Anthropic's
 * `{"type":"error","error":{...}}`), or undefined when the body is an answer. A body with
 * `choices` or of type `message` is an answer whatever else it carries.
 */
export function errorUnder2xx(text: string, classify: (body: string) => ClassifiedError, key: string): GatewayError | undefined {
  // Most answers never name the member: one native search spares them the structured scan.
  if (!text.includes('"error"')) return undefined;
  const span = findTopLevelMember(text, 'error');
  if (span === undefined) return undefined;
  const body = parseObject(text);
  if (body === undefined || !reportsError(body.error) || Array.isArray(body.choices) || body.type === 'message') return undefined;
  const c = classify(text);
  return new GatewayError('upstream_error', c.message === undefined ? 'upstream answered with an error under a success status' : withoutKey(c.message, key), {
    status: 502,
    type: c.type ?? 'upstream_error',
    publicCode: c.code ?? null,
    param: c.param ?? null,
  });
}

/** A chat completion whose `choices` is missing, not a list, or empty: nothing to answer with. */
export function hasNoChoices(text: string): boolean {
  const span = findTopLevelMember(text, 'choices');
  if (span === undefined) return true;
  if (text.charCodeAt(span.start) !== 91) return true; // [
  for (let i = span.start + 1; i < span.end; i++) {
    const ch = text.charCodeAt(i);
    if (!isJsonSpace(ch)) return ch === 93; // ]
  }
  return true;
}

export const NO_CHOICES = 'upstream returned a completion without choices';
