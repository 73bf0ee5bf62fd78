// The claim queue of start tasks (start_task_queue): one small record per unfinished task, so
// finding work reads this collection only, never the finished tasks (which grow with history;
// on the embedded FerretDB every query scans its whole collection). dueAt is when to look at
// the task again: its creation, or the end of the lease a worker holds. The entry names the
// task's user, so a claim can pass over users who hold their share of the workers (fair
// shares, lease-queue.ts). The lease itself, and everything else about the task, is the
// store's (store.ts).
import type { StartTaskQueueModel } from '../../../models/index.js';

/**
 * Start workers one user may hold on a replica at once: half of them, rounded up
 * (START_TASK_WORKERS 4 → 2; 2 → 1; 1 → 1, where no sharing is possible). A strict cap, not
 * one that applies only while others wait: a worker cannot be taken back from a start, and a
 * start may run a repository's setup script for up to 10 minutes, so a user who came first and
 * took every worker would keep them that long. This way the other half is always free of any
 * one user's backlog, and users with tasks waiting are served in turn (lease-queue.ts). The
 * price: a user alone on the service starts half as many at once per replica.
 */
export const startsPerUser = (workers: number) => Math.ceil(workers / 2);

/** An entry whose task is still missing after this long belongs to a creation that failed. */
const ORPHAN_ENTRY_MS = 60_000;
/** Younger than this, an entry whose task is missing is a creation under way: left due, in its place. */
const CREATING_MS = 5_000;

export interface QueueEntry {
  _id: string;
  createdAt: Date;
  /** Unset on entries an earlier version wrote: they are never passed over. */
  userId?: string | null;
}

export class TaskQueue {
  constructor(private readonly entries: StartTaskQueueModel) {}

  /**
   * Written before the task: a crash in between leaves an entry without a task (dropped later),
   * never a task no worker finds. Due at `dueAt` (its creation unless held back).
   */
  async enqueue(taskId: string, userId: string, createdAt: Date, dueAt = createdAt): Promise<void> {
    await this.entries.create({ _id: taskId, userId, dueAt, createdAt });
  }

  /** The first few entries due now, oldest due first, of users not in `passOver`. */
  due(now: Date, limit: number, passOver: readonly string[] = []): Promise<QueueEntry[]> {
    // Without users to pass over, the filter stays the bare due time (idle polls cost one range read).
    const users = passOver.length > 0 ? { userId: { $nin: [...passOver] } } : {};
    return this.entries
      .find({ dueAt: { $lte: now }, ...users }, { _id: 1, createdAt: 1, userId: 1 })
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
   * The entry is written before its task: a claim reading it in between must leave it where it
   * is. Pushed back (settle), it would fall behind its user's later starts, which then run first.
   */
  beingCreated(entry: QueueEntry, now: Date): boolean {
    return now.getTime() - entry.createdAt.getTime() < CREATING_MS;
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
