// The write gate: on the embedded FerretDB every update (and conditional delete) of a
// collection runs alone, as a single-document update does on MongoDB. FerretDB 1.24 applies an
// update by reading the matching documents, changing them in Go and writing each one back
// whole in a transaction of its own, so two updates of one document at once can lose one of
// them, and a conditional update or $inc decides nothing. Nothing on the wire makes that
// exclusive except an insert into a unique key. So:
// - in this process, the writes of a collection queue in one lane and run one at a time;
// - across processes sharing the database (replicas, the operator CLI), the lane holds the
//   collection's lock while it runs: a write_locks document inserted with the collection as its
//   unique name, deleted when the lane is done. The lane keeps it for a burst of queued writes
//   (BURST_MS or BURST_WRITES) and, while more are queued, for further bursts unless a waiter of
//   another process has marked the lock as wanted: one insert and one delete per burst.
// - a waiter polls. A lock whose holder is gone is taken over: its own leftover (a release lost
//   to an outage), a holder on this host whose process is dead (at once), or one the waiter has
//   seen held, unchanged, for the stale time (4 × the operation bound: longer than any write).
//   Taking over deletes that taking's _id only, so it never removes a newer one.
// A write that cannot start within the operation bound fails as "database unavailable" (503).
// On MongoDB there is no gate: single-document updates are atomic there.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import { MongoServerError, type Collection } from 'mongodb';
import { isDuplicateKeyError } from '../errors.js';
import { databaseUnavailable } from './unavailable.js';

/** A burst ends after this long or this many writes, when the lane checks whether another process waits. */
const BURST_MS = 20;
const BURST_WRITES = 32;
/** A waiter polls from MIN_POLL_MS, doubling up to MAX_POLL_MS (with jitter). */
const MIN_POLL_MS = 1;
const MAX_POLL_MS = 8;

export interface WriteLockDoc {
  _id: string;
  name: string;
  owner: string;
  host: string;
  pid: number;
  at: Date;
  wanted?: boolean;
}

export interface WriteGateOptions {
  /** DB_OPERATION_TIMEOUT_MS: the longest a write waits for its turn, and the basis of the stale time. */
  operationTimeoutMs: number;
  /** A lock seen unchanged this long is taken over (default 4 × operationTimeoutMs). */
  staleMs?: number;
}

/** What the gate did, for tests and the bench. */
export interface WriteGateStats {
  writes: number;
  locksTaken: number;
  waits: number;
  takeovers: number;
}

interface HeldLock {
  name: string;
  token: string;
}

export class WriteGate {
  /** One gate per database connection: two replicas in one test process are two owners. */
  readonly owner = `${os.hostname()}:${process.pid}:${crypto.randomBytes(6).toString('hex')}`;
  readonly stats: WriteGateStats = { writes: 0, locksTaken: 0, waits: 0, takeovers: 0 };
  private readonly lanes = new Map<string, Lane>();
  private readonly locks: LockTable;
  readonly operationTimeoutMs: number;

  constructor(locks: Collection<WriteLockDoc>, options: WriteGateOptions) {
    this.operationTimeoutMs = options.operationTimeoutMs;
    this.locks = new LockTable(locks, this, options.staleMs ?? 4 * options.operationTimeoutMs);
  }

  /**
   * Runs one write of `collection` alone. An upsert whose insert collides with a document
   * inserted meanwhile is retried once, as MongoDB does; FerretDB's answer to an update that
   * breaks a unique index (an internal error) becomes the duplicate key error MongoDB gives.
   */
  run<T>(collection: string, write: () => Promise<T>, upsert: boolean): Promise<T> {
    let lane = this.lanes.get(collection);
    if (!lane) this.lanes.set(collection, (lane = new Lane(collection, this.locks, this.operationTimeoutMs)));
    this.stats.writes++;
    return lane.enqueue(async () => {
      try {
        return await write();
      } catch (error) {
        const mapped = asDuplicateKeyError(error);
        if (!upsert || !isDuplicateKeyError(mapped)) throw mapped;
        return write().catch((again: unknown) => Promise.reject(asDuplicateKeyError(again)));
      }
    });
  }
}

interface Pending {
  start(): Promise<void>;
  fail(error: unknown): void;
}

/** The writes of one collection in this process, one at a time, under the collection's lock. */
class Lane {
  private readonly queue: Pending[] = [];
  private draining = false;
  /** The last release, still under way (a new lock is taken only after it). */
  private released: Promise<void> = Promise.resolve();

  constructor(
    private readonly name: string,
    private readonly locks: LockTable,
    private readonly boundMs: number,
  ) {}

  enqueue<T>(write: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        const at = this.queue.indexOf(pending);
        if (at < 0) return;
        this.queue.splice(at, 1);
        reject(databaseUnavailable(new Error(`a write to ${this.name} waited over ${this.boundMs} ms for its turn`)));
      }, this.boundMs);
      const pending: Pending = {
        start: () => {
          clearTimeout(timer);
          return write().then(resolve, reject);
        },
        fail: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      this.queue.push(pending);
      if (!this.draining) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      while (this.queue.length > 0) {
        await this.released;
        let lock: HeldLock | null;
        try {
          lock = await this.locks.acquire(this.name, () => this.queue.length > 0);
        } catch (error) {
          // The database is not answering: every queued write fails now, as it would without the gate.
          const unavailable = databaseUnavailable(error);
          for (const pending of this.queue.splice(0)) pending.fail(unavailable);
          continue;
        }
        if (lock) await this.holdWhileQueued(lock);
      }
    } finally {
      this.draining = false;
    }
  }

  /** Runs bursts of queued writes; between bursts keeps the lock unless another process wants it. */
  private async holdWhileQueued(lock: HeldLock): Promise<void> {
    for (;;) {
      const started = Date.now();
      for (let n = 0; this.queue.length > 0 && n < BURST_WRITES && Date.now() - started < BURST_MS; n++) {
        await this.queue.shift()!.start();
      }
      if (this.queue.length === 0) break;
      if (!(await this.locks.keep(lock))) {
        await this.locks.release(lock);
        // Give the waiting process a turn before asking again (its poll interval at most).
        await sleep(MAX_POLL_MS);
        return;
      }
    }
    // The writes' callers have their answers; the lock goes in the background.
    this.released = this.locks.release(lock);
  }
}

/** The write_locks collection, as one gate uses it. */
class LockTable {
  private readonly host = lockHost();
  /** Per collection: the holder's taking this gate last saw, and since when (its own clock). */
  private readonly seen = new Map<string, { token: string; since: number }>();

  constructor(
    private readonly locks: Collection<WriteLockDoc>,
    private readonly gate: WriteGate,
    private readonly staleMs: number,
  ) {}

  /** Takes the lock of `name`; null when nothing wants it any more (the writes waiting timed out). */
  async acquire(name: string, wanted: () => boolean): Promise<HeldLock | null> {
    let delay = MIN_POLL_MS;
    while (wanted()) {
      const token = crypto.randomUUID();
      try {
        await this.locks.insertOne({ _id: token, name, owner: this.gate.owner, host: this.host, pid: process.pid, at: new Date() });
        this.gate.stats.locksTaken++;
        return { name, token };
      } catch (error) {
        if (!isDuplicateKeyError(error)) throw error;
      }
      const holder = await this.locks.findOne({ name });
      if (!holder) continue; // released meanwhile
      if (this.abandoned(holder)) {
        this.gate.stats.takeovers++;
        await this.locks.deleteOne({ _id: holder._id });
        continue;
      }
      if (!holder.wanted) await this.locks.updateOne({ _id: holder._id }, { $set: { wanted: true } });
      this.gate.stats.waits++;
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
    if (holder.owner === this.gate.owner) return true;
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

/** FerretDB reports an update that breaks a unique index as an internal error; MongoDB as E11000. */
function asDuplicateKeyError(error: unknown): unknown {
  if (!(error instanceof MongoServerError) || error.code !== 1 || !/UNIQUE constraint failed/.test(error.message)) return error;
  const duplicate = new MongoServerError({ message: `E11000 duplicate key error (${error.message})`, code: 11000 });
  duplicate.cause = error;
  return duplicate;
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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
