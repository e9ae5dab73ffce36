// The provider adapter contract: pure translation plus an endpoint description. The pipeline
// owns the HTTP call, timeouts, retries, metrics and usage.

export type WireProtocol = 'openai-chat' | 'anthropic-messages' | 'openai-responses' | 'openai-embeddings';

export type Operation = 'chat';

/** What an adapter needs to know about the provider key it serves through. */
export interface ProviderKeyView {
  /** Provider label of the key (`openai`, `anthropic`, `deepseek`, ...). */
  provider: string;
  apiKey: string;
  apiBase: string | undefined;
  /** Top-level request renames; they have the last word over built-in renames. */
  paramRenames: Readonly<Record<string, string>> | undefined;
}

export interface AdapterTarget {
  key: ProviderKeyView;
  /** The model name sent upstream. */
  upstreamModel: string;
}

export interface EndpointSpec {
  url: string;
  /** Static headers, credentials included. */
  headers: Readonly<Record<string, string>>;
}

export type ErrorClass =
  | 'upstream_status'
  | 'invalid_credentials'
  | 'invalid_config'
  | 'rate_limited'
  | 'content_filter'
  | 'invalid_request';

export interface ClassifiedError {
  errorClass: ErrorClass;
  retryable: boolean;
  retryAfterMs: number | undefined;
  /** The upstream's own error text and identifiers, when its body had them. */
  message: string | undefined;
  type: string | undefined;
  code: string | null | undefined;
  param: string | null | undefined;
}

/** A provider that answers in-process (the built-in `mock`); deterministic, no I/O. */
export interface LocalResponder {
  chat(body: Record<string, unknown>, upstreamModel: string): LocalReply;
}

export type LocalReply =
  | { kind: 'json'; body: Record<string, unknown> }
  | { kind: 'sse'; chunks: Record<string, unknown>[] };

export interface Adapter {
  readonly id: string;
  readonly speaks: readonly WireProtocol[];
  readonly framing: 'sse' | 'aws-eventstream';
  /** The upstream endpoint of an operation, or an Error saying why the key cannot serve it. */
  endpoint(operation: Operation, key: ProviderKeyView): EndpointSpec | Error;
  /** Shape a request in a protocol the adapter speaks for this target (native path). */
  prepareRequest(operation: Operation, body: Record<string, unknown>, target: AdapterTarget): Record<string, unknown>;
  classifyError(status: number, body: string, headers: Readonly<Record<string, string | string[] | undefined>>): ClassifiedError;
  readonly local?: LocalResponder;
}
