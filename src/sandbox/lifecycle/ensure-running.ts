// Transparent resume: everything that needs a live sandbox (a conversation start, V0 start,
// the conversation routes that reach into the sandbox) calls ensureRunning. A paused, stopped
// or failed sandbox is resumed and waited for; a failed resume is retried with exponential
// backoff and ends in a 503 that says why, never a silent hang. The per-user limit applies
// (a resume past it is a 429 at once), and each call counts as a use of the sandbox.
import { AppError } from '../../errors.js';
import type { Metrics } from '../../metrics.js';
import type { SandboxesService } from '../service/sandboxes.service.js';
import type { SandboxUsage } from './usage.js';

export type SandboxConnection = Awaited<ReturnType<SandboxesService['connection']>>;

export interface ResumeOptions {
  /** Resume attempts before giving up. */
  attempts: number;
  /** Wait before the second attempt; doubled for each further one. */
  backoffMs: number;
  /** How long a sandbox may stay STARTING (the runtime's own start-up timeout). */
  startupTimeoutMs: number;
  pollMs?: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/** Failures a retry cannot fix: the limit, a sandbox or workspace that is gone, one being deleted. */
const FINAL_CODES = new Set(['TOO_MANY_REQUESTS', 'NOT_FOUND', 'CONFLICT', 'BAD_REQUEST', 'FORBIDDEN', 'UNAUTHORIZED']);
const START_GRACE_MS = 5_000;

export class SandboxResumer {
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  /** Resumes under way in this process, by user and sandbox. */
  private readonly resuming = new Map<string, Promise<SandboxConnection>>();

  constructor(
    private readonly sandboxes: SandboxesService,
    private readonly usage: SandboxUsage,
    private readonly metrics: Metrics,
    private readonly options: ResumeOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  /**
   * The user's sandbox, RUNNING and reachable; resumed first if it is not. `current` is the
   * caller's fresh read of that same user's sandbox, which saves reading it again.
   */
  async ensureRunning(userId: string, sandboxId: string, current?: SandboxConnection): Promise<SandboxConnection> {
    const connection = current ?? (await this.sandboxes.connection(userId, sandboxId)); // NOT_FOUND when not the user's
    await this.usage.touch(sandboxId);
    if (isReachable(connection)) return connection;
    // Requests that arrive together (a page's several routes) share one resume: separate ones
    // could count each other's starting sandbox against the per-user limit.
    const key = `${userId}\n${sandboxId}`;
    let resuming = this.resuming.get(key);
    if (!resuming) {
      resuming = this.resume(userId, sandboxId, connection).finally(() => this.resuming.delete(key));
      this.resuming.set(key, resuming);
    }
    return resuming;
  }

  private async resume(userId: string, sandboxId: string, found: SandboxConnection): Promise<SandboxConnection> {
    let connection = found;
    const { attempts: maxAttempts, backoffMs, startupTimeoutMs } = this.options;
    const started = this.now();
    // A start under way that fails was not ours to retry: it reports its own failure, as before.
    const foundStarting = connection.state.status === 'STARTING';
    let attempts = 0;
    let waitingUntil: number | null = null;
    let lastReason = '';
    let resumedOnce = false;
    for (;;) {
      const { status, reason } = connection.state;
      if (isReachable(connection)) {
        if (attempts > 0) this.metrics.sandboxResumeDuration.observe({ outcome: 'running' }, (this.now() - started) / 1000);
        return connection;
      }
      if ((status === 'STARTING' || status === 'RUNNING') && connection.desired === 'running') {
        waitingUntil ??= this.now() + startupTimeoutMs + START_GRACE_MS;
        if (this.now() > waitingUntil) throw this.unavailable(`Sandbox ${sandboxId} did not start in time (status ${status})`);
        await this.sleep(this.options.pollMs ?? 500);
        connection = await this.sandboxes.connection(userId, sandboxId);
        continue;
      }
      waitingUntil = null;
      // Paused by its owner (a stop) after a resume of ours went through: the pause wins.
      if (resumedOnce && connection.desired === 'paused') {
        throw new AppError('CONFLICT', `Sandbox ${sandboxId} was paused while it was resuming`, { reason: 'sandbox_paused' });
      }
      if (status === 'ERROR' && foundStarting && attempts === 0) {
        throw this.unavailable(`Sandbox ${sandboxId} failed to start: ${reason ?? status}`);
      }
      if (status !== 'PAUSED') lastReason = reason ?? status;
      if (attempts >= maxAttempts) {
        this.metrics.sandboxResumeDuration.observe({ outcome: 'failed' }, (this.now() - started) / 1000);
        const why = lastReason ? `: ${lastReason}` : '';
        throw this.unavailable(`Sandbox ${sandboxId} could not be resumed (${attempts} attempts)${why}`);
      }
      if (attempts > 0) {
        this.metrics.lifecycleActions.inc({ action: 'resume_retry' });
        await this.sleep(backoffMs * 2 ** (attempts - 1));
      }
      attempts++;
      try {
        await this.sandboxes.resume(userId, sandboxId);
        resumedOnce = true;
      } catch (error) {
        if (!(error instanceof AppError) || FINAL_CODES.has(error.code)) throw error;
        lastReason = error.message;
      }
      connection = await this.sandboxes.connection(userId, sandboxId);
    }
  }

  private unavailable(message: string): AppError {
    return new AppError('SERVICE_UNAVAILABLE', message, { reason: 'sandbox_resume_failed', retryAfterSeconds: 10 });
  }
}

/** RUNNING, with an address, and not being paused by a policy at this moment. */
function isReachable(connection: SandboxConnection): boolean {
  const { state, desired } = connection;
  return state.status === 'RUNNING' && desired === 'running' && Boolean(connection.internalUrl || connection.publicUrl);
}
