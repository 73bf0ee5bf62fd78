// Reconcile: runtime objects and records that have lost their counterpart are cleaned up.
// - Runtime objects without a record (a pod or a claim, a process directory that no record
//   names) are removed.
// - A record whose runtime objects are all gone (workspace included) is removed, and its
//   conversations say the workspace is gone.
// Starts write the record before any runtime object and deletes remove the objects before
// the record, so neither shows up in normal operation; still, a mismatch is acted on only
// when two consecutive passes see it (and a record only once it is older than a pass), so
// work in flight is never mistaken for debris. The runtime's namespace or data directory
// must belong to this deployment (one database) alone.
import type { Models } from '../../../models/index.js';
import type { Logger } from '../../logger.js';
import type { Metrics } from '../../metrics.js';
import type { SandboxRuntime } from '../runtime.js';
import { removeSandbox, type RemovalDeps } from './removal.js';

export interface ReconcilerDeps extends RemovalDeps {
  models: Models;
  runtime: SandboxRuntime;
  metrics: Metrics;
  log: Logger;
  intervalMs: number;
  now?: () => number;
}

const LOST = 'The workspace no longer exists: its runtime objects were removed outside this service';

export class Reconciler {
  private orphanSuspects = new Set<string>();
  private lostSuspects = new Set<string>();

  constructor(private readonly deps: ReconcilerDeps) {}

  /** One pass; returns what it removed. */
  async pass(): Promise<{ orphans: string[]; lostRecords: string[] }> {
    const { models, runtime, metrics, log } = this.deps;
    const now = new Date((this.deps.now ?? Date.now)());
    const present = new Set(await runtime.list());

    const recorded = new Set((await models.Sandbox.find({ _id: { $in: [...present] } }, { _id: 1 }).lean()).map((r) => r._id));
    const orphans: string[] = [];
    const orphanSuspects = new Set<string>();
    for (const id of present) {
      if (recorded.has(id)) continue;
      if (!this.orphanSuspects.has(id)) {
        orphanSuspects.add(id);
        continue;
      }
      if ((await models.Sandbox.exists({ _id: id })) || !(await this.deps.claims.claim(`orphan:${id}`))) continue;
      await this.deps.claims.carryOut(`orphan:${id}`, () => runtime.remove(id));
      orphans.push(id);
      metrics.lifecycleActions.inc({ action: 'orphan_removed' });
      log.info({ sandboxId: id }, 'removed runtime objects that no record names');
    }
    this.orphanSuspects = orphanSuspects;

    const settled = new Date(now.getTime() - this.deps.intervalMs);
    const live = { desired: { $in: ['running', 'paused'] } };
    const records = await models.Sandbox.find({ ...live, createdAt: { $lt: settled } }, { _id: 1 }).lean();
    const lostRecords: string[] = [];
    const lostSuspects = new Set<string>();
    for (const { _id } of records) {
      if (present.has(_id)) continue;
      if (!this.lostSuspects.has(_id)) {
        lostSuspects.add(_id);
        continue;
      }
      if (await removeSandbox(this.deps, _id, `lost:${_id}`, live, LOST, now)) {
        lostRecords.push(_id);
        metrics.lifecycleActions.inc({ action: 'lost_record_removed' });
      }
    }
    this.lostSuspects = lostSuspects;
    return { orphans, lostRecords };
  }
}
