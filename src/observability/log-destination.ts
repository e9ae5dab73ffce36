// The log stream's destination: every process log line (pino's and the pre-serialised
// per-request lines) goes through one batcher, so lines keep their order, and leaves for the file
// descriptor in large asynchronous writes, one at a time, off the request path.
//
// Why not sonic-boom (pino's default destination): per written batch it copies the data again
// (`Buffer.from` of every buffer on Node ≥ 22.7, a re-encode of every string on release), and in
// string mode re-measures the pending batch on every line. At proxy load that was tens of µs a
// request. Here a line costs an array push; a batch is joined and encoded once, written with
// fs.write (partial writes continued, EAGAIN retried), and a bounded queue drops whole batches,
// counted, if the reader of the descriptor stops reading.
import fs from 'node:fs';

type WriteFn = (fd: number, buffer: Buffer, offset: number, length: number, position: null, cb: (err: NodeJS.ErrnoException | null, written: number) => void) => void;
type WriteSyncFn = (fd: number, buffer: Buffer) => number;

export interface LineBatcherOptions {
  /** Batch size, in UTF-16 units (a cheap proxy for bytes), that triggers a write. */
  batchChars: number;
  /** Bytes queued for writing beyond which new batches are dropped. */
  maxQueuedBytes?: number;
  /** Retry delay after EAGAIN (a non-blocking pipe whose reader is behind). */
  retryMs?: number;
  write?: WriteFn;
  writeSync?: WriteSyncFn;
}

export class LineBatcher {
  /** Lines dropped because the queue was full (reported in the next line written). */
  dropped = 0;
  private readonly fd: number;
  private readonly batchChars: number;
  private readonly maxQueuedBytes: number;
  private readonly retryMs: number;
  private readonly writeFn: WriteFn;
  private readonly writeSyncFn: WriteSyncFn;
  private parts: string[] = [];
  private chars = 0;
  private readonly queue: Buffer[] = [];
  private queuedBytes = 0;
  private writing = false;
  private waiters: Array<() => void> = [];
  private droppedLines = 0;

  constructor(fd: number, options: LineBatcherOptions) {
    this.fd = fd;
    this.batchChars = options.batchChars;
    this.maxQueuedBytes = options.maxQueuedBytes ?? 64 * 1024 * 1024;
    this.retryMs = options.retryMs ?? 10;
    this.writeFn = options.write ?? (fs.write as unknown as WriteFn);
    this.writeSyncFn = options.writeSync ?? ((fd, buffer) => fs.writeSync(fd, buffer));
  }

  write(line: string): boolean {
    this.parts.push(line);
    this.chars += line.length;
    if (this.chars >= this.batchChars) this.enqueue();
    return true;
  }

  /** Queue the pending lines and call `cb` once everything queued so far is written (pino's `logger.flush`). */
  flush(cb?: (err?: Error) => void): void {
    this.enqueue();
    if (cb === undefined) return;
    if (!this.writing && this.queue.length === 0) cb();
    else this.waiters.push(() => cb());
  }

  /** Write everything not yet handed to the descriptor, synchronously (process exit). */
  flushSync(): void {
    this.enqueue();
    // A batch already handed to an asynchronous write is left to it: writing it again could
    // duplicate lines.
    const from = this.writing ? 1 : 0;
    try {
      for (let i = from; i < this.queue.length; i++) {
        let buf = this.queue[i];
        while (buf.length > 0) buf = buf.subarray(this.writeSyncFn(this.fd, buf));
      }
      this.queue.length = from;
    } catch {
      // A broken or full descriptor at exit: nothing more can be done.
    }
  }

  private enqueue(): void {
    if (this.parts.length === 0) return;
    const lines = this.parts.length;
    let text = this.parts.length === 1 ? this.parts[0] : this.parts.join('');
    this.parts = [];
    this.chars = 0;
    if (this.queuedBytes + text.length > this.maxQueuedBytes) {
      this.droppedLines += lines;
      this.dropped += lines;
      return;
    }
    if (this.droppedLines > 0) {
      text = `{"level":"warn","time":${JSON.stringify(new Date().toISOString())},"service":"tollgate","dropped_lines":${this.droppedLines},"msg":"log lines dropped: the log stream was not being read"}\n${text}`;
      this.droppedLines = 0;
    }
    const buf = Buffer.from(text, 'utf8');
    this.queue.push(buf);
    this.queuedBytes += buf.length;
    if (!this.writing) this.next();
  }

  private next(): void {
    const buf = this.queue[0];
    if (buf === undefined) {
      this.writing = false;
      const waiters = this.waiters;
      this.waiters = [];
      for (const w of waiters) w();
      return;
    }
    this.writing = true;
    this.writeFn(this.fd, buf, 0, buf.length, null, (err, written) => {
      if (err !== null) {
        if (err.code === 'EAGAIN') {
          setTimeout(() => this.next(), this.retryMs).unref();
          return;
        }
        // The descriptor is gone (EPIPE, EBADF): drop what is queued rather than retry forever.
        this.queue.length = 0;
        this.queuedBytes = 0;
      } else if (written < buf.length) {
        this.queue[0] = buf.subarray(written);
        this.queuedBytes -= written;
      } else {
        this.queue.shift();
        this.queuedBytes -= buf.length;
      }
      this.next();
    });
  }
}
