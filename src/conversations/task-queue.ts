// The claim queue of start tasks (start_task_queue): one small record per unfinished task, so
// finding work reads this collection only, never the finished tasks (which grow with history;
// on the embedded FerretDB every query scans its whole collection). dueAt is when to look at
// the task again: its creation, or the end of the lease a worker holds. The lease itself, and
// everything else about the task, is the store's (store.ts).
import type { StartTaskQueueModel } from '../../models/index.js';

/** An entry whose task is still missing after this long belongs to a creation that failed. */
const ORPHAN_ENTRY_MS = 60_000;

export interface QueueEntry {
  _id: string;
  createdAt: Date;
}

export class TaskQueue {
  constructor(private readonly entries: StartTaskQueueModel) {}

  /**
   * Written before the task: a crash in between leaves an entry without a task (dropped later),
   * never a task no worker finds. Due at `dueAt` (its creation unless held back).
   */
  async enqueue(taskId: string, createdAt: Date, dueAt = createdAt): Promise<void> {
    await this.entries.create({ _id: taskId, dueAt, createdAt });
  }

  /** The first few entries due now, oldest due first. */
  due(now: Date, limit: number): Promise<QueueEntry[]> {
    return this.entries
      .find({ dueAt: { $lte: now } }, { _id: 1, createdAt: 1 })
      .sort({ dueAt: 1 })
      .limit(limit)
      .lean();
  }

  async dueAt(taskId: string, at: Date): Promise<void> {
    await this.entries.updateOne({ _id: taskId }, { $set: { dueAt: at } });
  }

  /** The task finished (or is gone): it leaves the queue. */
  async remove(taskId: string): Promise<void> {
    await this.entries.deleteOne({ _id: taskId });
  }

  /**
   * A due entry whose task cannot be claimed: finished or deleted → the entry goes; leased by
   * another worker → looked at again when that lease ends; not written yet → looked at again
   * shortly, and dropped once it is clearly orphaned.
   */
  async settle(entry: QueueEntry, task: { unfinished: boolean; leaseExpiresAt?: Date | null } | null, now: Date): Promise<void> {
    if (task?.unfinished) await this.dueAt(entry._id, task.leaseExpiresAt ?? new Date(now.getTime() + 1000));
    else if (task || now.getTime() - entry.createdAt.getTime() > ORPHAN_ENTRY_MS) await this.remove(entry._id);
    else await this.dueAt(entry._id, new Date(now.getTime() + 1000));
  }
}
