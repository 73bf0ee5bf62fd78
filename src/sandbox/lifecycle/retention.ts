// Retention: a sandbox paused for longer than the retention period is deleted, workspace and
// all; its conversations stay listed and say that the workspace is gone. Candidates come from
// the index on {desired, desiredSince}; removals left half-done by a replica that died are
// finished here too.
import type { Models } from '../../../models/index.js';
import type { Logger } from '../../logger.js';
import type { Metrics } from '../../metrics.js';
import { finishRemoval, removeSandbox, STUCK_REMOVAL_MS, type RemovalDeps } from './removal.js';

export interface RetentionDeps extends RemovalDeps {
  models: Models;
  metrics: Metrics;
  log: Logger;
  retentionMs: number;
  now?: () => number;
}

export class Retention {
  constructor(private readonly deps: RetentionDeps) {}

  /** One pass; returns the ids it deleted. With retention off (0) it only finishes cut-short removals (and prunes old claims). */
  async pass(): Promise<string[]> {
    const { models, retentionMs } = this.deps;
    const now = new Date((this.deps.now ?? Date.now)());
    const cutoff = new Date(now.getTime() - retentionMs);
    const stuckBefore = new Date(now.getTime() - STUCK_REMOVAL_MS);
    // Both kinds of candidate in one query: on the embedded database each query reads every sandbox.
    const stuck = { desired: 'deleting', desiredSince: { $lt: stuckBefore } };
    const expired = { desired: 'paused', desiredSince: { $lt: cutoff } };
    const due = await models.Sandbox.find(retentionMs > 0 ? { $or: [expired, stuck] } : stuck, {
      _id: 1,
      desired: 1,
      desiredSince: 1,
    }).lean();
    const deleted: string[] = [];
    for (const { _id, desired, desiredSince } of due) {
      if (desired === 'paused') await this.deleteExpired(_id, desiredSince!, cutoff, now, deleted);
      else await this.finishStuckRemoval(_id, desiredSince!, stuckBefore, now);
    }
    await this.deps.claims.prune();
    return deleted;
  }

  private async deleteExpired(_id: string, desiredSince: Date, cutoff: Date, now: Date, deleted: string[]): Promise<void> {
    const reason = `The workspace was deleted after ${describeDuration(this.deps.retentionMs)} paused (retention)`;
    const key = `retention:${_id}:${desiredSince.getTime()}`;
    if (await removeSandbox(this.deps, _id, key, { desired: 'paused', desiredSince: { $lt: cutoff } }, reason, now)) {
      deleted.push(_id);
      this.deps.metrics.lifecycleActions.inc({ action: 'retention_delete' });
    }
  }

  private async finishStuckRemoval(_id: string, desiredSince: Date, stuckBefore: Date, now: Date): Promise<void> {
    const { models, log } = this.deps;
    const key = `stuck-removal:${_id}:${desiredSince.getTime()}`;
    if (!(await this.deps.claims.claim(key))) return;
    // A take-over that failed gives its claim back, so the next pass tries again.
    const taken = await this.deps.claims.carryOut(key, () =>
      models.Sandbox.findOneAndUpdate(
        { _id, desired: 'deleting', desiredSince: { $lt: stuckBefore } },
        { $set: { desiredSince: now } },
      ).lean(),
    );
    if (!taken) return;
    log.info({ sandboxId: _id }, 'finishing a sandbox removal another worker left');
    await finishRemoval(this.deps, taken.userId, _id, taken.removalReason ?? 'The workspace was deleted');
  }
}

/** 2592000000 → "30 days", 7200000 → "2 hours", 90000 → "90 s". */
export function describeDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  const plural = (n: number, unit: string) => `${n} ${unit}${n === 1 ? '' : 's'}`;
  if (s >= 86_400 && s % 86_400 === 0) return plural(s / 86_400, 'day');
  if (s >= 3_600 && s % 3_600 === 0) return plural(s / 3_600, 'hour');
  if (s >= 60 && s % 60 === 0) return plural(s / 60, 'minute');
  return `${s} s`;
}
