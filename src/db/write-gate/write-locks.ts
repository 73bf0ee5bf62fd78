// The cross-process half of the write gate (write-gate.ts): the write_locks collection, one
// lock per collection. An insert is the one exclusive step FerretDB has, so a lock is taken by
// inserting a document whose `name` (the collection) is unique, and released by deleting that
// taking's _id. A waiter polls, and marks the lock as wanted so its holder lets go at the end
// of its burst. A lock whose holder is gone is taken over: the gate's own leftover (a release
// lost to an outage), one whose holder process on this host is dead (at once), or one the
// waiter has seen held, unchanged, for the stale time. Taking over deletes that taking's _id
// only, so it never removes a newer one. (A holder stalled past the stale time, alive, would
// then write beside the new one: the stale time is 4 × the operation bound, longer than any write.)
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import type { Collection } from 'mongodb';
import { isDuplicateKeyError } from '../../errors.js';

/** A waiter polls from MIN_POLL_MS, doubling up to MAX_POLL_MS (with jitter). */
const MIN_POLL_MS = 1;
export const MAX_POLL_MS = 8;

export interface WriteLockDoc {
  _id: string;
  name: string;
  owner: string;
  host: string;
  pid: number;
  at: Date;
  wanted?: boolean;
}

export interface HeldLock {
  name: string;
  token: string;
}

/** What the locks did, for tests and the bench. */
export interface LockStats {
  locksTaken: number;
  waits: number;
  takeovers: number;
}

export class LockTable {
  private readonly host = lockHost();
  /** Per collection: the holder's taking this gate last saw, and since when (its own clock). */
  private readonly seen = new Map<string, { token: string; since: number }>();

  constructor(
    private readonly locks: Collection<WriteLockDoc>,
    /** The gate's id (one per database connection: two replicas in one test process are two owners). */
    private readonly owner: string,
    private readonly staleMs: number,
    private readonly stats: LockStats,
  ) {}

  /** Takes the lock of `name`; null when nothing wants it any more (the writes waiting timed out). */
  async acquire(name: string, wanted: () => boolean): Promise<HeldLock | null> {
    let delay = MIN_POLL_MS;
    while (wanted()) {
      const token = crypto.randomUUID();
      try {
        await this.locks.insertOne({ _id: token, name, owner: this.owner, host: this.host, pid: process.pid, at: new Date() });
        this.stats.locksTaken++;
        return { name, token };
      } catch (error) {
        if (!isDuplicateKeyError(error)) throw error;
      }
      const holder = await this.locks.findOne({ name });
      if (!holder) continue; // released meanwhile
      if (this.abandoned(holder)) {
        this.stats.takeovers++;
        await this.locks.deleteOne({ _id: holder._id });
        continue;
      }
      if (!holder.wanted) await this.locks.updateOne({ _id: holder._id }, { $set: { wanted: true } });
      this.stats.waits++;
      await sleep(delay * (0.5 + Math.random()));
      delay = Math.min(delay * 2, MAX_POLL_MS);
    }
    return null;
  }

  /** True while the lock is still this taking's and no other process asked for it. */
  async keep(lock: HeldLock): Promise<boolean> {
    try {
      const doc = await this.locks.findOne({ _id: lock.token }, { projection: { wanted: 1 } });
      return doc !== null && !doc.wanted;
    } catch {
      return false;
    }
  }

  /** Never fails: a release lost to an outage is this gate's leftover, removed when it next takes the lock. */
  async release(lock: HeldLock): Promise<void> {
    await this.locks.deleteOne({ _id: lock.token }).catch(() => {});
  }

  private abandoned(holder: WriteLockDoc): boolean {
    // This gate's own: its lane for the collection is the one asking, so nothing of it holds the lock.
    if (holder.owner === this.owner) return true;
    if (holder.host === this.host && !processAlive(holder.pid)) return true;
    const now = Date.now();
    const seen = this.seen.get(holder.name);
    if (!seen || seen.token !== holder._id) {
      this.seen.set(holder.name, { token: holder._id, since: now });
      return false;
    }
    return now - seen.since >= this.staleMs;
  }
}

/** Where pids mean the same: the host name and, on Linux, the pid namespace (containers may share a name). */
export function lockHost(): string {
  try {
    return `${os.hostname()}/${fs.readlinkSync('/proc/self/ns/pid')}`;
  } catch {
    return os.hostname();
  }
}

/** A process of this host exists (EPERM: it does, as another user). */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
