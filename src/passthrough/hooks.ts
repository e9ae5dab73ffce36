// Where request limits, budgets, concurrency reservations and guardrails plug into pass-through
// requests (spec 3 §8), as typed phase hooks the handler runs; no check is registered by
// default.
// - admit: after authentication, routing and body read, before the single upstream attempt. A
//   check refuses with an error (429, 422, ...) or admits, optionally holding something until
//   the request ends (`release`, called exactly once at finalize with the recorded outcome) and
//   taking a handle to end a running response (`bind`: a reservation lost mid-stream).
// - respond: per-response filters that see the buffered body or each event-stream chunk before
//   it is delivered, and may refuse it.
import type { RequestContext } from '../http/context.ts';
import type { ApiKeyEntry, Snapshot } from '../snapshot/snapshot.ts';
import type { PassthroughError } from './errors.ts';
import type { RequestShape } from './request-shape.ts';
import type { TokenCounts } from './token-counts.ts';

/** The request as admit checks and response filters see it. */
export interface AdmitRequest {
  readonly ctx: RequestContext;
  readonly snapshot: Snapshot;
  readonly routeId: string;
  readonly routeName: string;
  readonly credentialMode: 'inject' | 'forward_client';
  readonly providerKeyId: string | undefined;
  readonly key: ApiKeyEntry;
  readonly body: Buffer;
  readonly shape: RequestShape;
  /** The body's top-level `model` for recognised shapes, else ''. */
  readonly requestedModel: string;
}

/** How a request ended, as recorded on its usage event. */
export interface FinalOutcome {
  readonly status: number;
  readonly stream: boolean;
  readonly tokens: TokenCounts | undefined;
}

/** Ends a running response from outside the relay (the head may already be sent). */
export interface ResponseFailure {
  readonly error: PassthroughError;
  /** Recorded as the usage event's error_class. */
  readonly errorClass: string;
}

export type AdmitResult =
  | {
      readonly ok: true;
      readonly release?: (outcome: FinalOutcome) => void;
      readonly bind?: (end: (failure: ResponseFailure) => void) => void;
    }
  | { readonly ok: false; readonly error: PassthroughError; readonly errorClass?: string };

export type AdmitCheck = (request: AdmitRequest) => AdmitResult | Promise<AdmitResult>;

export interface ResponseFilter {
  /**
   * A non-event-stream response before its head is sent: the whole body, or undefined when it
   * is too large to buffer and is about to be relayed as it arrives.
   */
  body?(status: number, body: Buffer | undefined): ResponseFailure | undefined;
  /** One event-stream chunk before it is written. */
  chunk?(chunk: Buffer): ResponseFailure | undefined;
}

export type RespondHook = (request: AdmitRequest, status: number) => ResponseFilter | undefined;

export interface PassthroughHooks {
  readonly admit: readonly AdmitCheck[];
  readonly respond: readonly RespondHook[];
}

export const NO_HOOKS: PassthroughHooks = { admit: [], respond: [] };
