// The process logger: pino, JSON lines on stderr (stdout carries only the CLI's ready line).
import { fstatSync } from 'node:fs';
import { pino, type Logger } from 'pino';
import { LineBatcher, type DropReason, type LineBatcherOptions } from './log-destination.ts';

export type { Logger };

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';

/** Batch size of the asynchronous log stream. */
const BATCH_BYTES = 64 * 1024;

/** The warning written ahead of the next lines after the log stream dropped some. */
const dropNotice = (lines: number): string =>
  `{"level":"warn","time":${JSON.stringify(new Date().toISOString())},"service":"tollgate","dropped_lines":${lines},"msg":"log lines dropped: the log stream was not being read"}\n`;

export function createLogger(level: LogLevel, sync = false): Logger {
  if (sync) return pino(options(level), pino.destination({ dest: 2, sync: true }));
  // Batched: lines are written 64 KiB at a time, from the event loop when stderr is a pipe or
  // socket (writes that never block), else from the thread pool; a timer flushes a partial batch so
  // a quiet gateway's lines still appear within 250 ms, and whatever is pending is written
  // synchronously at exit.
  const stream = stderrStream();
  const batcher = new LineBatcher(2, { batchBytes: BATCH_BYTES, dropNotice, write: stream?.write, unwritten: stream?.unwritten });
  setInterval(() => {
    stream?.keepNonBlocking();
    batcher.flush();
  }, 250).unref();
  process.once('exit', () => batcher.flushSync());
  return pino(options(level), batcher);
}

/** stderr written from the event loop: see stderrStream. */
export interface StderrStream {
  /** Writes one batch; calls back once all of it is handed to the pipe (or the write failed). */
  write: NonNullable<LineBatcherOptions['write']>;
  /**
   * Bytes of the batch in flight (`length` bytes) the pipe has not taken yet; undefined when the
   * stream holds more than that batch (another writer's bytes), so its share is not known.
   */
  unwritten(length: number): number | undefined;
  /** Puts the pipe back in non-blocking mode, should another process have changed it. */
  keepNonBlocking(): void;
}

/**
 * Batches written to stderr from the event loop, when stderr is a pipe or a socket (a container
 * runtime's, systemd's, a log shipper's): through Node's own stream for it, whose libuv handle
 * writes what the pipe has room for at once and the rest when the pipe is writable again, so a
 * batch costs no hop to a pool thread and back, and a reader that falls behind is waited for, not
 * blocked on. undefined for anything else (a file, a terminal), which the thread pool writes.
 *
 * The stream needs the pipe in non-blocking mode, and that mode belongs to the pipe, not to this
 * process: another process sharing it (a child of ours that inherited stderr, restoring at its exit
 * the mode it found) can put it back in blocking mode. So it is set again before every batch (one
 * system call per 64 KiB) and on the log's 250 ms flush timer, which bounds how long a batch
 * already waiting for room could write in blocking mode.
 */
export function stderrStream(): StderrStream | undefined {
  try {
    const st = fstatSync(2);
    if (!st.isFIFO() && !st.isSocket()) return undefined;
  } catch {
    return undefined;
  }
  const stream = process.stderr;
  const handle = (stream as unknown as { _handle?: { setBlocking?(blocking: boolean): number; writeQueueSize?: number } })._handle;
  if (handle === undefined || typeof handle.setBlocking !== 'function') return undefined;
  const setBlocking = handle.setBlocking.bind(handle);
  // A failed write (EPIPE: the reader is gone) reaches the batch's callback, which counts it; the
  // stream's error event must not end the process.
  stream.on('error', () => {});
  return {
    write(_fd, buffer, offset, length, _position, cb) {
      const err = setBlocking(false);
      if (err !== 0) {
        cb(Object.assign(new Error(`stderr: cannot set non-blocking mode (${err})`), { code: 'EIO' }), 0);
        return;
      }
      stream.write(buffer.subarray(offset, offset + length), (e) => cb((e as NodeJS.ErrnoException | null | undefined) ?? null, e ? 0 : length));
    },
    // The stream counts a write's bytes until all are written, libuv the ones it has not written.
    unwritten: (length) => (stream.writableLength === 0 ? 0 : stream.writableLength === length ? handle.writeQueueSize : undefined),
    keepNonBlocking: () => void setBlocking(false),
  };
}

function options(level: LogLevel): pino.LoggerOptions {
  return {
    level,
    base: { service: 'tollgate' },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  };
}

/**
 * Write a pre-serialised JSON line to the logger's destination. For the per-request access
 * log: pino's per-field serialisation costs ~8 µs a line there, one JSON.stringify ~1 µs
 * (bench/README.md).
 */
export function lineWriter(logger: Logger): (line: string) => void {
  const stream = destination(logger);
  return (line) => {
    stream.write(line);
  };
}

/** A line written as a text head, then a body and a tail already UTF-8 encoded. */
export type FramedLineWriter = (head: string, body: Uint8Array, tail: Uint8Array) => void;

/**
 * Like lineWriter, for lines whose body is encoded once for several destinations (usage
 * events). With `onDropped`, the lines are accounted for: it hears of every one of them the
 * asynchronous log stream drops (its queue full, or stderr gone).
 */
export function framedLineWriter(logger: Logger, onDropped?: (lines: number, reason: DropReason) => void): FramedLineWriter {
  const stream = destination(logger);
  if (stream instanceof LineBatcher) {
    if (onDropped !== undefined) stream.onMarkedDropped = onDropped;
    const marked = onDropped !== undefined;
    return (head, body, tail) => stream.writeFramed(head, body, tail, marked);
  }
  // A synchronous destination (pino's own): the line as one string.
  const text = new TextDecoder();
  return (head, body, tail) => {
    stream.write(head + text.decode(body) + text.decode(tail));
  };
}

function destination(logger: Logger): { write(s: string): unknown } {
  return (logger as unknown as Record<symbol, { write(s: string): unknown }>)[pino.symbols.streamSym];
}

/** Flush buffered log lines (call before exiting). */
export function flushLogger(logger: Logger): void {
  try {
    logger.flush();
  } catch {
    // Nothing more can be done with a broken stderr.
  }
}
