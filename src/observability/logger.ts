// The process logger: pino, JSON lines on stderr (stdout carries only the CLI's ready line).
import { pino, type Logger } from 'pino';

export type { Logger };

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';

export function createLogger(level: LogLevel, sync = false): Logger {
  // Async destination: lines are buffered off the request path and written in batches of
  // 8 KiB; a timer flushes a partial batch so a quiet gateway's lines still appear within 250 ms.
  const destination = pino.destination({ dest: 2, sync, minLength: sync ? 0 : 8 * 1024 });
  if (!sync) setInterval(() => destination.flush(), 250).unref();
  return pino(
    {
      level,
      base: { service: 'tollgate' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}

/**
 * Write a pre-serialised JSON line to the logger's destination. For the per-request access
 * log: pino's per-field serialisation costs ~8 µs a line there, one JSON.stringify ~1 µs
 * (bench/README.md).
 */
export function lineWriter(logger: Logger): (line: string) => void {
  const stream = (logger as unknown as Record<symbol, { write(s: string): unknown }>)[pino.symbols.streamSym];
  return (line) => {
    stream.write(line);
  };
}

/** Flush buffered log lines (call before exiting). */
export function flushLogger(logger: Logger): void {
  try {
    logger.flush();
  } catch {
    // Nothing more can be done with a broken stderr.
  }
}
