// SANDBOX_AT_LIMIT=pause-oldest (sandbox-slots.ts): at the per-user running limit a start or
// resume makes room by pausing one of the user's running sandboxes, as OpenHands' own Docker
// sandbox service does. Which one: of those running for longer than SLOT_START_GRACE_MS (a
// younger one's own start may still be setting it up), those whose agents do not report running
// first (a pause interrupts a running agent), each group least recently used first: an agent
// that reports running is paused only when every candidate runs one, so the limit always holds.
// The paused sandbox reads PAUSED with the reason and resumes transparently when next used.
import type { Models, SandboxRecord } from '../../../models/index.js';
import type { Logger } from '../../logger.js';
import type { Metrics } from '../../metrics.js';
import type { SandboxRuntime } from '../runtime.js';
import { desiredChange } from './sandbox-records.js';
import type { MakeRoom, ReleaseSlot } from './sandbox-slots.js';

export const LIMIT_PAUSED = 'Paused to make room for a newer sandbox (SANDBOX_MAX_RUNNING_PER_USER); it resumes when used';

export function pauseLeastRecentlyUsed(
  models: Models,
  runtime: SandboxRuntime,
  metrics: Metrics,
  releaseSlot: ReleaseSlot,
  log?: Logger,
  /** Tells the lifecycle webhooks. */
  events?: { paused(record: SandboxRecord): Promise<void> },
): MakeRoom {
  return async (userId, running) => {
    const records = await models.Sandbox.find(
      { _id: { $in: running }, userId, desired: 'running' },
      { _id: 1, lastUsedAt: 1, runningConversations: 1 },
    ).lean();
    const busy = (r: (typeof records)[number]) => (r.runningConversations.length > 0 ? 1 : 0);
    records.sort((a, b) => busy(a) - busy(b) || (a.lastUsedAt?.getTime() ?? 0) - (b.lastUsedAt?.getTime() ?? 0));
    for (const candidate of records) {
      // Only if still running as recorded: another replica may be pausing the same one.
      const claimed = await models.Sandbox.findOneAndUpdate(
        { _id: candidate._id, userId, desired: 'running' },
        { $set: desiredChange('paused', { pausedBy: 'limit' }) },
      ).lean();
      if (!claimed) continue;
      try {
        await runtime.pause(candidate._id);
      } catch (error) {
        await models.Sandbox.updateOne({ _id: candidate._id, desired: 'paused', pausedBy: 'limit' }, { $set: { desired: 'running' } });
        log?.warn({ err: error, sandboxId: candidate._id }, 'pausing a sandbox to make room failed');
        continue;
      }
      await releaseSlot(userId, candidate._id);
      await events?.paused({ ...claimed, pausedBy: 'limit' });
      metrics.lifecycleActions.inc({ action: 'limit_pause' });
      log?.info({ sandboxId: candidate._id, userId }, 'paused the least recently used sandbox to make room');
      return candidate._id;
    }
    return null;
  };
}
