// A counting semaphore with a FIFO queue: at most `max` holders at once; waiters leave the
// queue when their signal aborts, so a stuck holder cannot pile up waiters without bound.
export class Limiter {
  private active = 0;
  private readonly waiting: { grant: () => void; signal: AbortSignal }[] = [];

  constructor(private readonly max: number) {}

  get queued(): number {
    return this.waiting.length;
  }

  /** Resolves with a release function once a slot is free; rejects with the signal's reason. */
  acquire(signal: AbortSignal): Promise<() => void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    if (this.active < this.max) {
      this.active++;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve, reject) => {
      const waiter = {
        grant: () => {
          signal.removeEventListener('abort', onAbort);
          resolve(this.releaser());
        },
        signal,
      };
      const onAbort = () => {
        const index = this.waiting.indexOf(waiter);
        if (index >= 0) this.waiting.splice(index, 1);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      // The slot passes straight to the next waiter still waiting (an aborted one has left).
      const next = this.waiting.find((w) => !w.signal.aborted);
      this.waiting.splice(0, next ? this.waiting.indexOf(next) + 1 : this.waiting.length);
      if (next) next.grant();
      else this.active--;
    };
  }
}
