// Relaying an upstream event stream to the caller through a line transform (native relay or
// translation), with the head sent on the first upstream bytes (ADR 0003), an idle timeout on
// every gap, backpressure, and a caller-protocol error frame when the stream breaks.
//
// A body labelled text/event-stream whose first byte (after whitespace) is `{` is no event stream
// (an SSE line starts with a field name, `:` or nothing): some upstreams send their JSON error
// document that way. It is read whole, nothing sent to the caller, and handed back to the attempt
// (NotAnEventStream), which treats it as the JSON answer it is: an error envelope fails the attempt
// as an in-band upstream error, so a model group can still fail over.
import { GatewayError } from '../../lib/errors.ts';
import { SseEventAssembler, SseFrameTooLarge, SseLineSplitter, type SseFrame } from '../../lib/sse-lines.ts';
import type { RequestContext } from '../../http/context.ts';
import { endStream, relayChunk, startStream, writeChunk } from '../../http/respond.ts';
import { IdleTimer } from '../../http/idle-timer.ts';
import type { CanonicalUsage } from '../protocols/canonical.ts';
import type { StreamDecoder } from '../providers/contract.ts';
import type { CallerCodec, NativeRelay, StreamEncoder } from './codecs.ts';
import { recordUsage } from './usage.ts';
import { inBandErrorStatus } from '../../lib/in-band-status.ts';
import type { UpstreamResponse } from '../../http/upstream.ts';
import { withoutKey } from './upstream-errors.ts';
import { isJsonSpace } from '../../lib/json-scan.ts';

/** A JSON document read whole before it would have been relayed; the SSE relay does not go further. */
const MAX_JSON_BODY_BYTES = 4 * 1024 * 1024;

/** The upstream's "event stream" was a JSON document, read whole; nothing reached the caller. */
export class NotAnEventStream extends Error {
  readonly text: string;

  constructor(text: string) {
    super('upstream answered a stream request with a JSON document under text/event-stream');
    this.text = text;
  }
}

export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
};

/** Translated path: upstream events → decoder → canonical chunks → the caller's encoder. */
export class TranslatingRelay implements NativeRelay {
  inBandError = false;
  decodeError: string | undefined = undefined;
  inBandStatus: number | undefined = undefined;
  readonly stopsAtError = true;
  private readonly assembler = new SseEventAssembler();
  private readonly decoder: StreamDecoder;
  private readonly encoder: StreamEncoder;
  private readonly codec: CallerCodec;

  constructor(decoder: StreamDecoder, encoder: StreamEncoder, codec: CallerCodec) {
    this.decoder = decoder;
    this.encoder = encoder;
    this.codec = codec;
  }

  get usage(): CanonicalUsage | undefined {
    return this.decoder.usage;
  }

  line(line: string): string {
    const event = this.assembler.line(line);
    return event === undefined ? '' : this.event(event);
  }

  finish(): { text: string; complete: boolean } {
    const last = this.assembler.end();
    let text = last === undefined ? '' : this.event(last);
    if (!this.inBandError && !this.decoder.finished) {
      // No terminal event (`[DONE]`, message_stop): complete when the finish reason came, as the
      // native path completes such streams.
      for (const chunk of this.decoder.complete() ?? []) text += this.encoder.push(chunk);
    }
    if (this.inBandError || !this.decoder.finished) return { text, complete: false };
    return { text: text + this.encoder.end(), complete: true };
  }

  private event(event: SseFrame): string {
    if (this.inBandError) return '';
    let out = '';
    for (const chunk of this.decoder.push(event)) out += this.encoder.push(chunk);
    const error = this.decoder.error;
    if (error !== undefined) {
      this.inBandError = true;
      // A stream the decoder cannot read is the gateway's own failure (upstream_decode): the
      // relay ends the stream with its frame. Anything else is the upstream's error event.
      if (error.type === 'upstream_decode') {
        this.decodeError = error.message;
      } else {
        this.inBandStatus = error.status ?? 502;
        out += this.codec.streamErrorFrame(new GatewayError('upstream_error', error.message, { type: error.type, status: this.inBandStatus }));
      }
    }
    return out;
  }
}

/**
 * Relay an upstream event stream. Each gap between upstream chunks, the first included, is
 * bounded by `idleMs`. Rejects (with nothing written) only when the upstream fails before its
 * first byte, or with NotAnEventStream when its body is a JSON document; afterwards failures end
 * the caller's stream with an error frame.
 */
export function relayStream(
  ctx: RequestContext,
  response: UpstreamResponse,
  relay: NativeRelay,
  codec: CallerCodec,
  idleMs: number,
  /** The provider key: masked in an in-band error the upstream may have echoed it in. */
  key: string,
): Promise<void> {
  const split = new SseLineSplitter();
  return new Promise<void>((resolve, reject) => {
    let started = false;
    let finished = false;
    /** The upstream's last line was not blank: an event is open (a stream may end without its blank line). */
    let open = false;
    const onLine = (line: string): string => {
      open = line.length > 0;
      return relay.line(line);
    };
    /** Status of the first in-band error event (0 while none arrived). */
    let inBandStatus = 0;
    /** Until the first byte that is not whitespace tells an event stream from a JSON document. */
    let shape: 'unknown' | 'sse' | 'json' = 'unknown';
    /** Bytes held while the shape is unknown, then the JSON document's bytes. */
    let held: Buffer[] = [];
    let heldBytes = 0;

    const start = (): void => {
      if (started) return;
      started = true;
      ctx.upstreamFirstByteMs ??= ctx.elapsedMs();
      ctx.downstreamFirstByteMs = ctx.elapsedMs();
      startStream(ctx, 200, { ...SSE_HEADERS });
    };
    const settle = (): void => {
      finished = true;
      ctx.upstreamEndMs = ctx.elapsedMs();
      idle.stop();
      unsubscribe();
      recordUsage(ctx, relay.usage);
    };
    const fail = (err: GatewayError, kind: string): void => {
      if (finished) return;
      settle();
      response.destroy();
      if (!started) {
        // Nothing reached the caller: the attempt failed, not (yet) the request. The rejection
        // carries the failure to the dispatch loop, which may fail over; a request that ends on it
        // gets its error there.
        reject(err);
        return;
      }
      ctx.fail(kind, err.message);
      if (inBandStatus === 0) {
        ctx.status = err.status;
        writeChunk(ctx, codec.streamErrorFrame(err));
      }
      // Otherwise the caller already has the upstream's error frame, and the stream's outcome is
      // that error's, whatever cut it short later.
      endStream(ctx);
      resolve();
    };
    /**
     * The upstream's stream cannot be read: the head (due with the first upstream bytes), what was
     * translated before, then the error frame; the upstream request is closed.
     */
    const decodeFailed = (out: string, message: string): void => {
      start();
      if (out.length > 0) writeChunk(ctx, out);
      fail(new GatewayError('upstream_decode', message), 'upstream_decode');
    };
    const idle = new IdleTimer(idleMs, () => {
      fail(new GatewayError('upstream_timeout', `upstream stream timed out after ${idleMs}ms without data`), 'timeout');
    });
    const resumeAfterDrain = (): boolean => {
      if (finished) return false;
      idle.arm();
      return true;
    };
    const unsubscribe = ctx.onCancel(() => {
      if (finished) return;
      settle();
      ctx.fail('client_disconnected', 'client disconnected mid-stream');
      response.destroy();
      resolve();
    });

    response.on('data', (data: Buffer) => {
      if (finished) return;
      let chunk = data;
      if (shape !== 'sse') {
        if (shape === 'unknown') {
          let i = 0;
          while (i < chunk.length && isJsonSpace(chunk[i])) i++;
          if (i < chunk.length) shape = chunk[i] === 123 ? 'json' : 'sse'; // {
        }
        if (shape !== 'sse') {
          held.push(chunk);
          heldBytes += chunk.length;
          if (heldBytes > MAX_JSON_BODY_BYTES) {
            fail(new GatewayError('upstream_decode', `upstream answered a stream request with a JSON document larger than ${MAX_JSON_BODY_BYTES} bytes`), 'upstream_decode');
            return;
          }
          idle.arm();
          return;
        }
        if (held.length > 0) chunk = Buffer.concat([...held, chunk]);
        held = [];
      }
      let out = '';
      try {
        split.push(chunk, (line) => (out += onLine(line)));
      } catch (e) {
        if (e instanceof SseFrameTooLarge) {
          fail(new GatewayError('upstream_decode', e.message), 'upstream_decode');
          return;
        }
        throw e;
      }
      if (relay.decodeError !== undefined) {
        decodeFailed(out, relay.decodeError);
        return;
      }
      start();
      if (relay.inBandError) {
        out = withoutKey(out, key);
        if (inBandStatus === 0) {
          inBandStatus = relay.inBandStatus ?? inBandFrameStatus(out);
          ctx.fail('upstream_in_band', 'upstream sent an error event mid-stream');
          // The status is the error's from now on: a caller that leaves after reading the error
          // frame (as the SDKs do) does not turn the stream into a 200.
          ctx.status = inBandStatus;
        }
        if (relay.stopsAtError) {
          // Nothing after the error event would be relayed: end the caller's stream with it now
          // rather than hold it (and the upstream request) open until the upstream ends.
          if (out.length > 0) writeChunk(ctx, out);
          settle();
          response.destroy();
          endStream(ctx);
          resolve();
          return;
        }
      }
      if (out.length > 0 && !relayChunk(ctx, out, response, resumeAfterDrain)) {
        // The caller reads slower than the upstream writes: the idle clock stops meanwhile.
        idle.stop();
        return;
      }
      idle.arm();
    });
    response.once('end', () => {
      if (finished) return;
      if (shape === 'json') {
        settle();
        reject(new NotAnEventStream(Buffer.concat(held).toString('utf8')));
        return;
      }
      let out = '';
      // Whitespace only: the blank lines it holds are the stream's.
      for (const chunk of held) split.push(chunk, (line) => (out += onLine(line)));
      held = [];
      const rest = split.flush();
      if (rest.length > 0) out += onLine(rest);
      // Close an event the upstream left open, as its blank line would: relayed as it is, the
      // caller's parser would merge it with the frame `finish` appends ([DONE], message_stop).
      if (open) out += onLine('');
      const end = relay.finish();
      out += end.text;
      if (relay.decodeError !== undefined) {
        decodeFailed(out, relay.decodeError);
        return;
      }
      if (!started && out.length === 0 && !end.complete) {
        // The upstream ended without a byte of its stream: nothing reached the caller, so this is
        // an ordinary attempt failure (a group fails over).
        fail(new GatewayError('upstream_decode', 'upstream stream ended before sending any event'), 'upstream_decode');
        return;
      }
      start();
      if (relay.inBandError) {
        out = withoutKey(out, key);
        if (inBandStatus === 0) inBandStatus = relay.inBandStatus ?? inBandFrameStatus(out);
        ctx.fail('upstream_in_band', 'upstream sent an error event mid-stream');
        if (out.length > 0) writeChunk(ctx, out);
        // Recorded at stream end (spec 2 §6.1): an in-band 4xx keeps its status, anything else is 502.
        ctx.status = inBandStatus;
        settle();
        endStream(ctx);
        resolve();
        return;
      }
      if (out.length > 0) writeChunk(ctx, out);
      if (!end.complete) {
        fail(new GatewayError('stream_aborted', 'upstream stream ended before the response was complete'), 'upstream_decode');
        return;
      }
      settle();
      endStream(ctx);
      resolve();
    });
    failOnBreak(response, fail, 'stream');
    idle.arm();
  });
}

/** Fail a relay when its upstream body breaks: undecodable bytes, or the connection. */
export function failOnBreak(response: UpstreamResponse, fail: (err: GatewayError, kind: string) => void, what: 'stream' | 'body'): void {
  const broke = (): void => {
    if (response.undecodable !== undefined) fail(new GatewayError('upstream_decode', response.undecodable), 'upstream_decode');
    else fail(new GatewayError('upstream_transport', `upstream connection broke mid-${what}`), 'transport');
  };
  response.once('error', broke);
  response.once('aborted', broke);
}

/**
 * The status a stream that carried an in-band error is recorded with: the error's own 4xx when
 * its frame names one (a numeric status or code, or a known type or code), else 502. Reads the
 * relayed text of the error frame; runs once per failed stream.
 */
export function inBandFrameStatus(text: string): number {
  for (const line of text.split('\n')) {
    if (!line.startsWith('data:') || !line.includes('"error"')) continue;
    let frame: unknown;
    try {
      frame = JSON.parse(line.slice(5));
    } catch {
      continue;
    }
    if (frame === null || typeof frame !== 'object') continue;
    const outer = frame as Record<string, unknown>;
    // Only an error frame counts (a content delta may well contain the word "error").
    if (outer.error === null || typeof outer.error !== 'object') continue;
    return inBandErrorStatus(outer.error);
  }
  return 502;
}
