// Anthropic upstream failures → the pipeline's error classes. The body is Anthropic's envelope
// `{type:"error", error:{type, message}}`; overload (529 `overloaded_error`) and every 5xx retry.
import { readAnthropicError } from '../../protocols/anthropic-messages.ts';
import type { ClassifiedError } from '../contract.ts';
import { retryAfterMsOf } from '../../../lib/http-headers.ts';

type Headers = Readonly<Record<string, string | string[] | undefined>>;

/**
 * A 400 is a content-policy refusal when Anthropic's message says so ("Output blocked by
 * content filtering policy"); Anthropic has no dedicated error type for it.
 */
const CONTENT_POLICY = /content (?:filtering )?policy/i;

export function classifyAnthropicError(status: number, body: string, headers: Headers): ClassifiedError {
  const fields = readAnthropicError(body);
  const retryable = status >= 500 || status === 408;
  let errorClass: ClassifiedError['errorClass'];
  if (status === 401 || status === 403) errorClass = 'invalid_credentials';
  else if (status === 429) errorClass = 'rate_limited';
  else if (retryable) errorClass = 'upstream_status';
  else if (status === 400 && fields?.message !== undefined && CONTENT_POLICY.test(fields.message)) errorClass = 'content_filter';
  else if (status >= 400 && status < 500) errorClass = 'invalid_request';
  else errorClass = 'upstream_status';
  return {
    errorClass,
    retryable,
    retryAfterMs: retryAfterMsOf(headers),
    message: fields?.message,
    type: fields?.type,
    code: null,
    param: null,
  };
}
