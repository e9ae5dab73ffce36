// The log stream's front: every process log line (pino's and the pre-serialised per-request
// lines) goes through one batcher, so lines keep their order, and leaves for stderr in batches.
// Why not sonic-boom's own batching alone: its write() re-measures the UTF-8 length of the whole
// pending batch on every line (O(batch) per line), which costs several µs per request at load.
// Here a line costs an array push; the batch is joined, encoded once, and handed to sonic-boom as
// one Buffer (its buffer mode: no per-write string re-encoding either).

/** What the batcher writes batches to (a sonic-boom instance in production). */
export interface BatchSink {
  write(chunk: Buffer): unknown;
  flush?(cb: (err?: Error) => void): void;
  flushSync?(): void;
}

export class LineBatcher {
  private readonly sink: BatchSink;
  private readonly minChars: number;
  private parts: string[] = [];
  private chars = 0;

  /** `minChars`: batch size (in UTF-16 units, a cheap proxy for bytes) that triggers a write. */
  constructor(sink: BatchSink, minChars: number) {
    this.sink = sink;
    this.minChars = minChars;
  }

  write(line: string): boolean {
    this.parts.push(line);
    this.chars += line.length;
    if (this.chars >= this.minChars) this.push();
    return true;
  }

  /** Hand the pending lines to the sink, then let it flush (pino's `logger.flush` calls this). */
  flush(cb?: (err?: Error) => void): void {
    this.push();
    if (this.sink.flush !== undefined) this.sink.flush(cb ?? noop);
    else cb?.();
  }

  /** Write everything now (process exit). */
  flushSync(): void {
    this.push();
    try {
      this.sink.flushSync?.();
    } catch {
      // A sink not ready or a broken stderr: nothing more can be done at exit.
    }
  }

  private push(): void {
    if (this.parts.length === 0) return;
    const batch = this.parts.length === 1 ? this.parts[0] : this.parts.join('');
    this.parts = [];
    this.chars = 0;
    this.sink.write(Buffer.from(batch, 'utf8'));
  }
}

const noop = (): void => {};
