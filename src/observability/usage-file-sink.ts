// The NDJSON file sink (`observability.usage_event.file`): one usage event per line, appended.
// Emitting encodes the event's line into a batch buffer; a timer (or a full batch) hands the batch
// to the file in one asynchronous write, so the request path never waits on the disk. When the
// disk cannot keep up, batches beyond a bounded backlog are dropped and counted, never buffered
// without limit. A process that exits without closing the sink writes what is queued first.
import { closeSync, openSync } from 'node:fs';
import { jsonText } from '../lib/json-text.ts';
import { LineBatcher, rejectionReason } from './log-destination.ts';
import { usageEventMembersBytes } from './usage-event-json.ts';
import type { UsageEvent, UsageSink } from './usage-events.ts';

export interface FileUsageSinkOptions {
  /** Flush a partial batch after this long (default 250 ms). */
  flushMs?: number;
  /** Write at once when a batch reaches this size (default 64 KiB). */
  batchBytes?: number;
  /** Bytes queued for writing above which new batches are dropped (default 16 MiB). */
  maxBacklogBytes?: number;
  /** Lines were dropped: `backlog_full` or `write_error`. */
  onReject?: (reason: 'backlog_full' | 'write_error', lines: number) => void;
  /** Writing to the file failed; called once. */
  onError?: (err: Error) => void;
}

const FILE_TAIL = jsonText('}\n');

export class FileUsageSink implements UsageSink {
  readonly path: string;
  private readonly fd: number;
  private readonly lines: LineBatcher;
  private readonly timer: NodeJS.Timeout;
  private closed: Promise<void> | undefined;
  /** An exit without close (a second shutdown signal): what is queued is written before it. */
  private readonly onExit = (): void => {
    if (this.closed === undefined) this.lines.flushSync();
  };

  /** Opens (creates, appends to) the file at once: a path that cannot be written fails here, at startup. */
  constructor(path: string, options: FileUsageSinkOptions = {}) {
    this.path = path;
    this.fd = openSync(path, 'a');
    const onReject = options.onReject;
    this.lines = new LineBatcher(this.fd, {
      batchBytes: options.batchBytes ?? 64 * 1024,
      maxQueuedBytes: options.maxBacklogBytes ?? 16 * 1024 * 1024,
      onDropped: onReject && ((lines, reason) => onReject(rejectionReason(reason), lines)),
      onError: (err) => options.onError?.(err),
    });
    this.timer = setInterval(() => this.lines.flush(), options.flushMs ?? 250);
    this.timer.unref();
    process.once('exit', this.onExit);
  }

  emit(event: UsageEvent): void {
    // After close the descriptor's number may already belong to another file.
    if (this.closed !== undefined) return;
    this.lines.writeFramed('{', usageEventMembersBytes(event), FILE_TAIL);
  }

  /** Hand the queued lines to the file. */
  flush(): void {
    if (this.closed === undefined) this.lines.flush();
  }

  /** Flush and close the file; resolves once every queued line is written (or writing failed). */
  close(): Promise<void> {
    this.closed ??= new Promise((resolve) => {
      clearInterval(this.timer);
      process.off('exit', this.onExit);
      this.lines.flush(() => {
        closeSync(this.fd);
        resolve();
      });
    });
    return this.closed;
  }
}
