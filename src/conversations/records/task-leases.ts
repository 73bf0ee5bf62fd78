// The start tasks' side of the lease queue (lease-queue.ts). Claims read the claim queue
// (start_task_queue, task-queue.ts: one entry per unfinished task), never the tasks, so idle
// polling costs the same with any number of finished tasks. The lease is on the task, where
// the workflow's writes check it (store.ts, updateLeasedTask); the entry's dueAt only says
// when to look again.
import type { Models } from '../../../models/index.js';
import type { RecordTable } from '../../db/record-lists/record-table.js';
import type { TaskRow } from '../../db/record-lists/record-tables.js';
import type { StartTaskStatus } from '../../../contract/app-conversations.schema.js';
import type { DecisionClaims } from '../../db/claims.js';
import type { LeaseStore } from '../../db/lease-queue.js';
import { TERMINAL } from './queries.js';
import type { StartTask } from './queries.js';
import type { TaskQueue } from './task-queue.js';

export function startTaskLeases(
  models: Models,
  tasks: RecordTable<TaskRow>,
  queue: TaskQueue,
  claims: DecisionClaims,
): LeaseStore<StartTask> {
  const asTask = (record: unknown) => record as StartTask;
  return {
    /**
     * The task of the oldest due queue entry whose lease is free or expired (of the first few,
     * one another replica has not just taken), of a user not passed over (fair shares,
     * lease-queue.ts); the claim counts as an attempt. The attempt's claim key makes it
     * exclusive by an insert alone, on either database.
     */
    claim: async (owner, leaseMs, passOver) => {
      const now = new Date();
      // Users whose oldest due start is still being written: their later starts wait for it.
      const creating = new Set<string>();
      for (const entry of await queue.due(now, 4, passOver)) {
        if (entry.userId && creating.has(entry.userId)) continue;
        const task = await models.StartTask.findOne({ _id: entry._id }, { status: 1, leaseExpiresAt: 1, attempts: 1 }).lean();
        if (!task && queue.beingCreated(entry, now)) {
          if (entry.userId) creating.add(entry.userId);
          continue;
        }
        if (!task || TERMINAL.includes(task.status as StartTaskStatus) || (task.leaseExpiresAt && task.leaseExpiresAt >= now)) {
          await queue.settle(entry, task && { unfinished: !TERMINAL.includes(task.status as StartTaskStatus), ...task }, now);
          continue;
        }
        if (!(await claims.claim(`start-task:${entry._id}:${task.attempts ?? 0}`))) continue;
        const leaseEnd = new Date(now.getTime() + leaseMs);
        const record = await tasks.update(entry._id, {}, { $set: { leaseOwner: owner, leaseExpiresAt: leaseEnd }, $inc: { attempts: 1 } });
        if (record) {
          await queue.dueAt(entry._id, leaseEnd);
          return asTask(record);
        }
      }
      return null;
    },
    renew: async (taskId, owner, leaseMs) => {
      const leaseEnd = new Date(Date.now() + leaseMs);
      if (await tasks.update(taskId, { leaseOwner: owner }, { $set: { leaseExpiresAt: leaseEnd } })) await queue.dueAt(taskId, leaseEnd);
    },
    release: async (taskIds, owner) => {
      // One task at a time, by id (on the embedded FerretDB the owner is checked on the record read).
      for (const taskId of taskIds) {
        if (await tasks.update(taskId, { leaseOwner: owner }, { $set: { leaseOwner: null, leaseExpiresAt: null } }))
          await queue.dueAt(taskId, new Date());
      }
    },
  };
}
