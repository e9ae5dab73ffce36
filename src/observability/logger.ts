// The process logger: pino, JSON lines on stderr (stdout carries only the CLI's ready line).
import { pino, type Logger } from 'pino';

export type { Logger };

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';

export function createLogger(level: LogLevel, sync = false): Logger {
  // Async destination: lines are written off the request path (batched while a write is in
  // flight) and flushed on exit.
  const destination = pino.destination({ dest: 2, sync });
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

/** Flush buffered log lines (call before exiting). */
export function flushLogger(logger: Logger): void {
  try {
    logger.flush();
  } catch {
    // Nothing more can be done with a broken stderr.
  }
}
