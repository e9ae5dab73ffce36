// The provider adapter contract: pure translation plus an endpoint description. The pipeline
// owns the HTTP call, timeouts, retries, metrics and usage.
import type { SseFrame } from '../../lib/sse-lines.ts';
import type { CanonicalUsage, StreamError } from '../protocols/canonical.ts';

export type { CanonicalUsage, StreamError };

export type WireProtocol = 'openai-chat' | 'anthropic-messages' | 'openai-responses' | 'openai-embeddings' | 'openai-completions' | 'rerank' | 'openai-images' | 'openai-speech';

export const OPERATIONS = ['chat', 'messages', 'count_tokens', 'embeddings', 'completions', 'rerank', 'images', 'speech'] as const;

/**
 * Upstream operations: `chat` is the canonical request (native or translated by the adapter); the
 * others are native only (`images`: image generation; `speech`: text to speech).
 */
export type Operation = (typeof OPERATIONS)[number];

/** What an adapter needs to know about the provider key it serves through. */
export interface ProviderKeyView {
  /** Provider label of the key (`openai`, `anthropic`, `deepseek`, ...). */
  provider: string;
  apiKey: string;
  apiBase: string | undefined;
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
  /**
   * An OpenAI embeddings answer; present when the adapter speaks `openai-embeddings`. Throws a
   * GatewayError for a request it refuses, as an upstream would answer 400.
   */
  embeddings?(body: Record<string, unknown>, upstreamModel: string): Record<string, unknown>;
  /** An OpenAI completions answer (JSON or chunks); present when the adapter speaks `openai-completions`. */
  completions?(body: Record<string, unknown>, upstreamModel: string): LocalReply;
  /** A rerank answer; present when the adapter speaks `rerank`. Throws a GatewayError for a request it refuses. */
  rerank?(body: Record<string, unknown>, upstreamModel: string): Record<string, unknown>;
  /** An image generation answer; present when the adapter speaks `openai-images`. Throws a GatewayError for a request it refuses. */
  images?(body: Record<string, unknown>, upstreamModel: string): Record<string, unknown>;
  /** Speech audio; present when the adapter speaks `openai-speech`. */
  speech?(body: Record<string, unknown>, upstreamModel: string): { contentType: string; audio: Buffer };
}

export type LocalReply =
  | { kind: 'json'; body: Record<string, unknown> }
  | { kind: 'sse'; chunks: Record<string, unknown>[] };

/** One server-sent event as the upstream framed it (assembled by lib/sse-lines.ts). */
export type SseEvent = SseFrame;

/** An in-band error event of a vendor stream, in the vendor's own words. */

/**
 * Turns a vendor event stream into canonical chat-completion chunks (OpenAI
 * `chat.completion.chunk` objects), one upstream event at a time. Reasoning text is carried as
 * `delta.reasoning_content`; tool calls as `delta.tool_calls` with `index`, `id`, `type`,
 * `function.name` on the first delta of each call and `function.arguments` fragments after.
 */
export interface StreamDecoder {
  push(event: SseEvent): Record<string, unknown>[];
  /** Usage collected so far (canonical). */
  readonly usage: CanonicalUsage | undefined;
  /**
   * The vendor's terminal event arrived after the finish reason (the response is complete). A
   * terminal event without a finish reason is an `upstream_decode` error instead.
   */
  readonly finished: boolean;
  /**
   * The upstream ended without its terminal event. When the response had reached its finish
   * reason, the stream is complete all the same: `finished` turns true and the closing chunks (a
   * usage chunk, say) are returned. Undefined when the response was cut short.
   */
  complete(): Record<string, unknown>[] | undefined;
  /** Set when the vendor sent an in-band error event. */
  readonly error: StreamError | undefined;
}

/**
 * The translated path (ARCHITECTURE §6): the canonical protocol is OpenAI Chat Completions.
 * An adapter whose upstream speaks something else converts canonical requests to its wire
 * format and its answers back.
 */
export interface Translator {
  /** Canonical chat request (already validated) → vendor request body for `target`. */
  encodeRequest(body: Record<string, unknown>, target: AdapterTarget): Record<string, unknown>;
  /** Vendor JSON response text → canonical `chat.completion` object, or an Error if undecodable. */
  decodeResponse(text: string): Record<string, unknown> | Error;
  createStreamDecoder(): StreamDecoder;
}

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
  /** Present when the adapter serves canonical chat requests through its own wire format. */
  readonly translator?: Translator;
}
