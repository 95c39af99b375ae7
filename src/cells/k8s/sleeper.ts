/** An interruptible pause for the k8s cell's retry loops: `interrupt()` ends the current sleep at once (on stop). */
export class Sleeper {
  private wake?: () => void;

  /** Resolves after `ms`, or at `interrupt()`. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }

  /** Ends the current sleep, if any. */
  interrupt(): void {
    this.wake?.();
  }
}
