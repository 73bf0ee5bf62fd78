// Idle auto-pause: a running sandbox with no use through this service for the idle time, and
// whose agent does not report running, is paused. Candidates come from the index on
// {desired, lastUsedAt} (running sandboxes idle past the cut-off: a small set by design). Of
// several replicas exactly one takes each decision (a claim keyed by the sandbox and the use
// it was idle since), and a conditional update lets a use or a "running" report that landed
// meanwhile win.
import { WARM_POOL_OWNER, type Models, type SandboxRecord } from '../../../models/index.js';
import type { Logger } from '../../logger.js';
import type { Metrics } from '../../metrics.js';
import type { SandboxRuntime } from '../runtime.js';
import type { ReleaseSlot } from '../service/sandbox-slots.js';
import { desiredChange } from '../service/sandbox-records.js';
import type { DecisionClaims } from '../../db/claims.js';

export interface IdlePauserDeps {
  models: Models;
  runtime: SandboxRuntime;
  claims: DecisionClaims;
  metrics: Metrics;
  log: Logger;
  releaseSlot: ReleaseSlot;
  idlePauseMs: number;
  now?: () => number;
  /** Tells the lifecycle webhooks. */
  onPaused?: (record: SandboxRecord) => Promise<void>;
}

export class IdlePauser {
  constructor(private readonly deps: IdlePauserDeps) {}

  /** One pass; returns the ids it paused. */
  async pass(): Promise<string[]> {
    const { models, runtime, idlePauseMs } = this.deps;
    const now = new Date((this.deps.now ?? Date.now)());
    const cutoff = new Date(now.getTime() - idlePauseMs);
    const candidates = await models.Sandbox.find(
      { desired: 'running', lastUsedAt: { $lt: cutoff }, userId: { $ne: WARM_POOL_OWNER } },
      { _id: 1, runningConversations: 1, lastUsedAt: 1 },
    ).lean();
    const paused: string[] = [];
    for (const candidate of candidates) {
      if (candidate.runningConversations.length > 0) {
        // An agent reported running: leave it, unless the sandbox is down and so runs nothing
        // (a crashed agent server cannot report that it stopped).
        const { status } = await runtime.state(candidate._id, 'running');
        if (status === 'RUNNING' || status === 'STARTING') continue;
      }
      if (await this.pauseIdle(candidate, cutoff, now)) paused.push(candidate._id);
    }
    return paused;
  }

  /**
   * Takes the decision to pause one idle sandbox and carries it out. A decision that could not
   * be carried out (the pod's deletion or the record's update failed) gives its claim back, so a
   * later pass of any replica takes it again instead of leaving it claimed and undone for an hour.
   */
  private async pauseIdle(candidate: Candidate, cutoff: Date, now: Date): Promise<boolean> {
    const { models, runtime, claims, log } = this.deps;
    const key = `idle:${candidate._id}:${candidate.lastUsedAt!.getTime()}`;
    if (!(await claims.claim(key))) return false;
    const claimed = await claims.carryOut(key, () =>
      models.Sandbox.findOneAndUpdate(
        {
          _id: candidate._id,
          desired: 'running',
          lastUsedAt: { $lt: cutoff },
          runningConversations: { $size: candidate.runningConversations.length },
        },
        { $set: desiredChange('paused', { pausedBy: 'idle' }, now) },
      ).lean(),
    );
    if (!claimed) return false; // used or reported running meanwhile
    try {
      await runtime.pause(candidate._id);
    } catch (error) {
      // Running-as-recorded again, and undecided: the next pass tries again.
      await models.Sandbox.updateOne({ _id: candidate._id, desired: 'paused', pausedBy: 'idle' }, { $set: { desired: 'running' } });
      await claims.release(key);
      log.warn({ err: error, sandboxId: candidate._id }, 'pausing an idle sandbox failed');
      return false;
    }
    this.deps.metrics.lifecycleActions.inc({ action: 'idle_pause' });
    log.info({ sandboxId: candidate._id, userId: claimed.userId }, 'paused an idle sandbox');
    // Paused from here on. A slot left held is freed by the next start that finds the user at the limit.
    await this.deps.releaseSlot(claimed.userId, candidate._id).catch((error: unknown) => {
      log.warn({ err: error, sandboxId: candidate._id }, 'freeing the slot of an idle-paused sandbox failed');
    });
    await this.deps.onPaused?.({ ...claimed, pausedBy: 'idle' });
    return true;
  }
}

type Candidate = Pick<SandboxRecord, '_id' | 'runningConversations' | 'lastUsedAt'>;
