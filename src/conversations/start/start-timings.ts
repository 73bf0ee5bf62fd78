// Where a start's time goes, part by part (finer than its statuses' phase_times): the
// "conversation ready" log line carries it, and bench/lifecycle.ts reports it by part. Parts
// that run at the same time each count their own duration; a part met several times (the
// status writes, the commands in the sandbox) adds up, with its count.
export interface StartPart {
  ms: number;
  count: number;
}

export class StartTimings {
  private readonly parts = new Map<string, StartPart>();

  /** Times `work` under `name`. */
  async time<T>(name: string, work: Promise<T> | (() => Promise<T>)): Promise<T> {
    const started = performance.now();
    try {
      return await (typeof work === 'function' ? work() : work);
    } finally {
      this.add(name, performance.now() - started);
    }
  }

  add(name: string, ms: number): void {
    const part = this.parts.get(name) ?? { ms: 0, count: 0 };
    part.ms += ms;
    part.count += 1;
    this.parts.set(name, part);
  }

  /** Milliseconds (to a tenth) and counts by part, in the order first met. */
  toJSON(): Record<string, StartPart> {
    return Object.fromEntries([...this.parts].map(([name, part]) => [name, { ms: Math.round(part.ms * 10) / 10, count: part.count }]));
  }
}
