// A background pass run every interval: one pass at a time per process, errors logged and
// the next pass scheduled anyway. Passes decide each sandbox with an atomic conditional
// update on its record, so the same job running on several replicas acts once per sandbox.
import type { Logger } from '../../logger.js';

/** What a pass returns when it left its turn to another replica (SandboxLifecycle's shared passes). */
export const PASS_SKIPPED = Symbol('pass skipped');

export class PeriodicJob {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | null = null;
  private stopped = true;
  private again = false;

  constructor(
    readonly name: string,
    private readonly intervalMs: number,
    private readonly pass: () => Promise<unknown>,
    private readonly log: Logger,
    /** Told after every pass, failed or not, with its duration and whether it was skipped (the passes metrics: operators and tests see the job running). */
    private readonly onPass: (seconds: number, skipped: boolean) => void = () => {},
  ) {}

  start(firstDelayMs = this.intervalMs): void {
    this.stopped = false;
    this.schedule(firstDelayMs);
  }

  /** Runs a pass soon (e.g. the warm pool after a claim); a pass under way is followed by another. */
  kick(): void {
    if (this.stopped) return;
    if (this.running) this.again = true;
    else this.schedule(0);
  }

  /** Runs one pass, after any pass under way. */
  private async runOnce(): Promise<void> {
    while (this.running) await this.running;
    const started = performance.now();
    let skipped = false;
    this.running = this.pass()
      .then((result) => void (skipped = result === PASS_SKIPPED))
      .catch((error: unknown) => this.log.warn({ err: error, job: this.name }, 'lifecycle pass failed'))
      .finally(() => {
        this.running = null;
        this.onPass((performance.now() - started) / 1000, skipped);
      });
    await this.running;
  }

  /** Stops scheduling and waits for a pass under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    while (this.running) await this.running;
  }

  private schedule(delayMs: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.tick(), delayMs);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    await this.runOnce();
    if (this.stopped) return;
    const soon = this.again;
    this.again = false;
    this.schedule(soon ? 0 : this.intervalMs);
  }
}
