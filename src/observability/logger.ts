// The process logger: pino, JSON lines on stderr (stdout carries only the CLI's ready line).
import { pino, type Logger } from 'pino';
import { LineBatcher, type DropReason } from './log-destination.ts';

export type { Logger };

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';

/** Batch size of the asynchronous log stream. */
const BATCH_BYTES = 64 * 1024;

/** The warning written ahead of the next lines after the log stream dropped some. */
const dropNotice = (lines: number): string =>
  `{"level":"warn","time":${JSON.stringify(new Date().toISOString())},"service":"tollgate","dropped_lines":${lines},"msg":"log lines dropped: the log stream was not being read"}\n`;

export function createLogger(level: LogLevel, sync = false): Logger {
  if (sync) return pino(options(level), pino.destination({ dest: 2, sync: true }));
  // Asynchronous: lines are batched off the request path (64 KiB: each asynchronous write costs
  // the event loop tens of µs, so few large ones); a timer flushes a partial batch so a quiet
  // gateway's lines still appear within 250 ms, and whatever is pending is written
  // synchronously at exit.
  const batcher = new LineBatcher(2, { batchBytes: BATCH_BYTES, dropNotice });
  setInterval(() => batcher.flush(), 250).unref();
  process.once('exit', () => batcher.flushSync());
  return pino(options(level), batcher);
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
