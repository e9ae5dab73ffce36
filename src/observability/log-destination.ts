// Line streams to a file descriptor, written off the request path: the process log (every pino
// line and the pre-serialised per-request lines go through one batcher, so lines keep their
// order) and the NDJSON usage-event file. Lines are encoded straight into a batch buffer; a full
// batch leaves in one asynchronous write (fs.write on the thread pool, or the caller's own, such
// as the log's pipe stream), one at a time (partial writes continued, EAGAIN retried), and a
// bounded queue drops whole batches, counted, when the descriptor's reader stops reading. Written
// buffers are filled again: nothing per line or per batch is left on the heap to be promoted while
// a slow pipe drains (fresh 64 KiB buffers per batch cost a full mark-compact every second or so
// under load).
//
// Why not sonic-boom (pino's default destination): per written batch it copies the data again
// (`Buffer.from` of every buffer on Node ≥ 22.7, a re-encode of every string on release), and in
// string mode re-measures the pending batch on every line. At proxy load that was tens of µs a
// request.
import fs from 'node:fs';

type WriteFn = (fd: number, buffer: Buffer, offset: number, length: number, position: null, cb: (err: NodeJS.ErrnoException | null, written: number) => void) => void;
type WriteSyncFn = (fd: number, buffer: Buffer) => number;

export interface LineBatcherOptions {
  /** Batch size, in bytes, that triggers a write. */
  batchBytes: number;
  /** Bytes queued for writing beyond which new batches are dropped. */
  maxQueuedBytes?: number;
  /** Retry delay after EAGAIN (a non-blocking pipe whose reader is behind). */
  retryMs?: number;
  /** Lines were dropped (full queue, or the descriptor failed). */
  onDropped?: (lines: number, reason: DropReason) => void;
  /** The descriptor failed (not EAGAIN); called once. Later lines are dropped. */
  onError?: (err: NodeJS.ErrnoException) => void;
  /** A line written ahead of the next batch after drops (the log's warning); none when absent. */
  dropNotice?: (lines: number) => string;
  write?: WriteFn;
  writeSync?: WriteSyncFn;
  /**
   * Bytes of the batch in flight (`length` bytes) that its write has not handed to the descriptor
   * yet, for a writer that can tell (a stream's queue); undefined when it cannot. An exit writes
   * them ahead of the batches behind it; a batch in flight whose rest is not known is left to its
   * write.
   */
  unwritten?: (length: number) => number | undefined;
}

interface Batch {
  /** What is left to write. */
  data: Buffer;
  /** The whole buffer, reused once written. */
  store: Buffer;
  lines: number;
  /** How many of `lines` were written marked. */
  marked: number;
}

export type DropReason = 'queue_full' | 'write_error';

/** A drop reason as tollgate_usage_events_rejected_total's `reason` label reads it. */
export const rejectionReason = (reason: DropReason): 'backlog_full' | 'write_error' => (reason === 'queue_full' ? 'backlog_full' : 'write_error');

/** Written buffers kept for the next batches. */
const MAX_SPARES = 2;

/** How long an exit waits for the reader of a non-blocking descriptor to make room, without it taking any. */
const EXIT_WAIT_MS = 2000;

/** Blocks the thread for `ms` (the exit path only, where nothing else is left to run). */
const sleepSync = (ms: number): void => void Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

export class LineBatcher {
  private readonly fd: number;
  private readonly batchBytes: number;
  private readonly maxQueuedBytes: number;
  private readonly retryMs: number;
  private readonly options: LineBatcherOptions;
  private readonly writeFn: WriteFn;
  private readonly writeSyncFn: WriteSyncFn;
  /** The batch being filled. */
  private buf: Buffer | undefined;
  private used = 0;
  private lines = 0;
  private marked = 0;
  private readonly queue: Batch[] = [];
  private readonly spares: Buffer[] = [];
  private queuedBytes = 0;
  private writing = false;
  private broken = false;
  private waiters: Array<() => void> = [];
  private unnoticed = 0;
  /**
   * Dropped lines that were written marked (`write(line, true)`): a writer that must account for
   * its own lines (the usage-event log sink) learns of their loss here.
   */
  onMarkedDropped: ((lines: number, reason: DropReason) => void) | undefined = undefined;

  constructor(fd: number, options: LineBatcherOptions) {
    this.fd = fd;
    this.options = options;
    this.batchBytes = options.batchBytes;
    this.maxQueuedBytes = options.maxQueuedBytes ?? 64 * 1024 * 1024;
    this.retryMs = options.retryMs ?? 10;
    this.writeFn = options.write ?? (fs.write as unknown as WriteFn);
    this.writeSyncFn = options.writeSync ?? ((fd, buffer) => fs.writeSync(fd, buffer));
  }

  write(line: string, marked = false): boolean {
    // Room for the worst case: 3 UTF-8 bytes per UTF-16 unit.
    const buf = this.room(line.length * 3, marked);
    if (buf === undefined) return true;
    this.used += buf.write(line, this.used);
    this.added(marked);
    return true;
  }

  /**
   * One line made of a text head and a body and tail already encoded (a record serialised once
   * for several destinations, framed differently for each).
   */
  writeFramed(head: string, body: Uint8Array, tail: Uint8Array, marked = false): void {
    const buf = this.room(head.length * 3 + body.length + tail.length, marked);
    if (buf === undefined) return;
    let at = this.used + buf.write(head, this.used);
    buf.set(body, at);
    at += body.length;
    buf.set(tail, at);
    this.used = at + tail.length;
    this.added(marked);
  }

  /** The batch buffer with room for `need` more bytes; undefined when the line is dropped (broken descriptor). */
  private room(need: number, marked: boolean): Buffer | undefined {
    if (this.broken) {
      this.options.onDropped?.(1, 'write_error');
      if (marked) this.onMarkedDropped?.(1, 'write_error');
      return undefined;
    }
    if (this.buf !== undefined && this.used + need > this.buf.length) this.enqueue();
    if (this.buf === undefined && this.unnoticed > 0 && this.options.dropNotice !== undefined) {
      const notice = this.options.dropNotice(this.unnoticed);
      this.unnoticed = 0;
      this.write(notice);
      // The notice's buffer was sized for the notice: a long line goes to a batch of its own.
      const noticed = this.buf as Buffer | undefined;
      if (noticed !== undefined && this.used + need > noticed.length) this.enqueue();
    }
    this.buf ??= this.take(need);
    return this.buf;
  }

  /** A line was added to the batch: count it, and queue the batch once it is full. */
  private added(marked: boolean): void {
    this.lines++;
    if (marked) this.marked++;
    if (this.used >= this.batchBytes) this.enqueue();
  }

  /** Queue the pending lines and call `cb` once everything queued so far is written (pino's `logger.flush`). */
  flush(cb?: (err?: Error) => void): void {
    this.enqueue();
    if (cb === undefined) return;
    if (!this.writing && this.queue.length === 0) cb();
    else this.waiters.push(() => cb());
  }

  /**
   * Write everything not yet handed to the descriptor, synchronously (process exit), in order. The
   * reader of a non-blocking descriptor (the log's pipe) is waited for while it takes bytes, and
   * given up on after EXIT_WAIT_MS without taking any.
   */
  flushSync(): void {
    this.enqueue();
    let from = 0;
    if (this.writing) {
      const head = this.queue[0];
      const rest = this.options.unwritten?.(head.data.length);
      // A batch in flight: what its write has not handed over yet goes first (a line cut there and
      // followed by the next batch would be torn); when that is not known, it is left to its write,
      // as writing it again could duplicate lines.
      if (rest === undefined) from = 1;
      else head.data = head.data.subarray(Math.max(0, head.data.length - rest));
    }
    let deadline = Date.now() + EXIT_WAIT_MS;
    try {
      for (let i = from; i < this.queue.length; i++) {
        let data = this.queue[i].data;
        while (data.length > 0) {
          try {
            data = data.subarray(this.writeSyncFn(this.fd, data));
            deadline = Date.now() + EXIT_WAIT_MS;
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code !== 'EAGAIN' || Date.now() > deadline) throw err;
            sleepSync(1);
          }
        }
      }
      this.queue.length = from;
    } catch {
      // A broken or full descriptor at exit: nothing more can be done.
    }
  }

  /** A buffer for the next batch, big enough for `need` bytes: a spare when one fits. */
  private take(need: number): Buffer {
    const size = Math.max(2 * this.batchBytes, need);
    const spare = this.spares.pop();
    return spare !== undefined && spare.length >= size ? spare : Buffer.allocUnsafe(size);
  }

  private spare(buf: Buffer): void {
    if (this.spares.length < MAX_SPARES) this.spares.push(buf);
  }

  private enqueue(): void {
    const buf = this.buf;
    if (buf === undefined) return;
    const used = this.used;
    const lines = this.lines;
    const marked = this.marked;
    this.buf = undefined;
    this.used = 0;
    this.lines = 0;
    this.marked = 0;
    if (used === 0) {
      this.spare(buf);
      return;
    }
    if (this.queuedBytes + used > this.maxQueuedBytes) {
      this.unnoticed += lines;
      this.spare(buf);
      this.options.onDropped?.(lines, 'queue_full');
      if (marked > 0) this.onMarkedDropped?.(marked, 'queue_full');
      return;
    }
    this.queue.push({ data: buf.subarray(0, used), store: buf, lines, marked });
    this.queuedBytes += used;
    if (!this.writing) this.next();
  }

  private next(): void {
    const batch = this.queue[0];
    if (batch === undefined) {
      this.writing = false;
      const waiters = this.waiters;
      this.waiters = [];
      for (const w of waiters) w();
      return;
    }
    this.writing = true;
    const data = batch.data;
    this.writeFn(this.fd, data, 0, data.length, null, (err, written) => {
      if (err !== null) {
        if (err.code === 'EAGAIN') {
          setTimeout(() => this.next(), this.retryMs).unref();
          return;
        }
        // The descriptor is gone (EPIPE, EBADF): drop what is queued rather than retry forever.
        this.fail(err);
      } else if (written < data.length) {
        batch.data = data.subarray(written);
        this.queuedBytes -= written;
      } else {
        this.queue.shift();
        this.queuedBytes -= data.length;
        this.spare(batch.store);
      }
      this.next();
    });
  }

  private fail(err: NodeJS.ErrnoException): void {
    let lost = 0;
    let lostMarked = 0;
    for (const b of this.queue) {
      lost += b.lines;
      lostMarked += b.marked;
    }
    this.queue.length = 0;
    this.queuedBytes = 0;
    if (lost > 0) this.options.onDropped?.(lost, 'write_error');
    if (lostMarked > 0) this.onMarkedDropped?.(lostMarked, 'write_error');
    if (this.options.onError === undefined) return;
    // A sink that reports errors stops taking lines; the log stream keeps trying (stderr may come back).
    this.broken = true;
    this.options.onError(err);
  }
}
