// The NDJSON file sink (`observability.usage_event.file`): one usage event per line, appended.
// Emitting serialises the event and queues the line; a timer (or a full batch) hands the batch
// to the file stream in one write, so the request path never waits on the disk. When the disk
// cannot keep up, lines beyond a bounded backlog are dropped and counted, never buffered without
// limit.
import { closeSync, createWriteStream, openSync, type WriteStream } from 'node:fs';
import { usageEventJson, type UsageEvent, type UsageSink } from './usage-events.ts';

export interface FileUsageSinkOptions {
  /** Flush a partial batch after this long (default 250 ms). */
  flushMs?: number;
  /** Write at once when a batch reaches this size (default 64 KiB). */
  batchBytes?: number;
  /** Queued plus unwritten bytes above which new lines are dropped (default 16 MiB). */
  maxBacklogBytes?: number;
  /** A line was dropped: `backlog_full` or `write_error`. */
  onReject?: (reason: 'backlog_full' | 'write_error') => void;
  /** The file stream failed; called once. */
  onError?: (err: Error) => void;
}

export class FileUsageSink implements UsageSink {
  readonly path: string;
  private readonly stream: WriteStream;
  private readonly batchBytes: number;
  private readonly maxBacklog: number;
  private readonly onReject: FileUsageSinkOptions['onReject'];
  private pending: string[] = [];
  private pendingBytes = 0;
  private broken = false;
  private readonly timer: NodeJS.Timeout;

  /** Opens (creates, appends to) the file at once: a path that cannot be written fails here, at startup. */
  constructor(path: string, options: FileUsageSinkOptions = {}) {
    this.path = path;
    const fd = openSync(path, 'a');
    this.stream = createWriteStream('', { fd, flags: 'a' });
    this.batchBytes = options.batchBytes ?? 64 * 1024;
    this.maxBacklog = options.maxBacklogBytes ?? 16 * 1024 * 1024;
    this.onReject = options.onReject;
    this.stream.once('error', (err) => {
      this.broken = true;
      this.pending = [];
      this.pendingBytes = 0;
      options.onError?.(err);
    });
    this.timer = setInterval(() => this.flush(), options.flushMs ?? 250);
    this.timer.unref();
  }

  emit(event: UsageEvent): void {
    if (this.broken) {
      this.onReject?.('write_error');
      return;
    }
    const line = usageEventJson(event) + '\n';
    if (this.pendingBytes + this.stream.writableLength > this.maxBacklog) {
      this.onReject?.('backlog_full');
      return;
    }
    this.pending.push(line);
    this.pendingBytes += line.length;
    if (this.pendingBytes >= this.batchBytes) this.flush();
  }

  /** Hand the queued lines to the file stream (one write). */
  flush(): void {
    if (this.pending.length === 0 || this.broken) return;
    const chunk = this.pending.length === 1 ? this.pending[0] : this.pending.join('');
    this.pending = [];
    this.pendingBytes = 0;
    this.stream.write(chunk);
  }

  /** Flush and close the file; resolves once every queued line is on disk (or the stream failed). */
  close(): Promise<void> {
    clearInterval(this.timer);
    this.flush();
    return new Promise((resolve) => {
      if (this.broken || this.stream.closed) {
        resolve();
        return;
      }
      this.stream.end(() => resolve());
      this.stream.once('error', () => resolve());
    });
  }
}

/** Check that `path` can be opened for appending; the error message names the path. */
export function checkWritable(path: string): string | undefined {
  try {
    closeSync(openSync(path, 'a'));
    return undefined;
  } catch (err) {
    return `cannot open ${JSON.stringify(path)} for appending: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`;
  }
}
