// The inactivity clock of a relayed event stream: fires when no upstream chunk arrived for `ms`.
// Re-armed on every chunk without allocating (Timeout.refresh), stopped while backpressure holds
// the upstream (the caller is the slow side then), cleared when the stream settles.
export class IdleTimer {
  private readonly ms: number;
  private readonly onIdle: () => void;
  private timer: NodeJS.Timeout | undefined = undefined;

  /** `ms` <= 0: no bound, the timer never runs. */
  constructor(ms: number, onIdle: () => void) {
    this.ms = ms;
    this.onIdle = onIdle;
  }

  /** Start the clock, or restart it from now. */
  arm(): void {
    if (this.ms <= 0) return;
    if (this.timer === undefined) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.onIdle();
      }, this.ms);
    } else {
      this.timer.refresh();
    }
  }

  /** Stop the clock (paused or settled); `arm` starts it again. */
  stop(): void {
    if (this.timer === undefined) return;
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
