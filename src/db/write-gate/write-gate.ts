// The write gate: on the embedded FerretDB every update (and conditional delete) of a
// collection runs alone, as a single-document update does on MongoDB. FerretDB 1.24 applies an
// update by reading the matching documents, changing them in Go and writing each one back
// whole in a transaction of its own, so two updates of one document at once can lose one of
// them, and a conditional update or $inc decides nothing. Nothing on the wire makes that
// exclusive except an insert into a unique key. So:
// - in this process, the writes of a collection queue in one lane and run one at a time.
//   (Writes naming different documents by _id were tried side by side: FerretDB's SQLite
//   answered concurrent updates with long tails, and a burst waits for its slowest write, so
//   that was slower than one at a time; npm run bench:writes.)
// - across processes sharing the database (replicas, the operator CLI), the lane holds the
//   collection's lock while it runs (write-locks.ts). It keeps it for a burst of queued writes
//   (BURST_MS or BURST_WRITES) and, while more are queued, for further bursts unless a waiter
//   of another process has asked for it: one insert and one delete per burst.
// A write that cannot start within the operation bound fails as "database unavailable" (503).
// On MongoDB there is no gate: single-document updates are atomic there.
//
// An exclusive section (exclusive()) is a turn of the lane that runs several operations: the
// gated writes it sends to its own collection run at once, inside the turn, so a read by _id
// and the writes computed from it are atomic together (record-table.ts keeps its lists so).
import { AsyncLocalStorage } from 'node:async_hooks';
import crypto from 'node:crypto';
import os from 'node:os';
import { MongoServerError, type Collection } from 'mongodb';
import { isDuplicateKeyError } from '../../errors.js';
import { databaseUnavailable } from '../unavailable.js';
import { LockTable, MAX_POLL_MS, sleep, type HeldLock, type LockStats, type WriteLockDoc } from './write-locks.js';

export type { WriteLockDoc } from './write-locks.js';

/** A burst ends after this long or this many writes, when the lane checks whether another process waits. */
const BURST_MS = 20;
const BURST_WRITES = 32;

export interface WriteGateOptions {
  /** DB_OPERATION_TIMEOUT_MS: the longest a write waits for its turn, and the basis of the stale time. */
  operationTimeoutMs: number;
  /** A lock seen unchanged this long is taken over (default 4 × operationTimeoutMs). */
  staleMs?: number | undefined;
}

/** What the gate did, for tests and the bench. */
export interface WriteGateStats extends LockStats {
  writes: number;
}

export class WriteGate {
  readonly owner = `${os.hostname()}:${process.pid}:${crypto.randomBytes(6).toString('hex')}`;
  readonly stats: WriteGateStats = { writes: 0, locksTaken: 0, waits: 0, takeovers: 0 };
  private readonly lanes = new Map<string, Lane>();
  private readonly locks: LockTable;
  /** The collection whose turn the current async context runs in (an exclusive section). */
  private readonly turn = new AsyncLocalStorage<string>();
  /** Set by close(): a write sent after it could take a lock that the closed connection never releases. */
  private closing = false;
  /** Exclusive sections under way: `turn` is enabled only while one is (see exclusive()). */
  private sections = 0;

  constructor(
    locks: Collection<WriteLockDoc>,
    private readonly options: WriteGateOptions,
  ) {
    this.locks = new LockTable(locks, this.owner, options.staleMs ?? 4 * options.operationTimeoutMs, this.stats);
  }

  /**
   * Runs one write of `collection` in its turn. An upsert whose insert collides with a document
   * inserted meanwhile is retried once, as MongoDB does; FerretDB's answer to an update that
   * breaks a unique index (an internal error) becomes the duplicate key error MongoDB gives.
   */
  run<T>(collection: string, write: () => Promise<T>, upsert: boolean): Promise<T> {
    this.stats.writes++;
    const once = async () => {
      try {
        return await write();
      } catch (error) {
        const mapped = asDuplicateKeyError(error);
        if (!upsert || !isDuplicateKeyError(mapped)) throw mapped;
        return write().catch((again: unknown) => Promise.reject(asDuplicateKeyError(again)));
      }
    };
    // Inside an exclusive section of this collection: the section's turn is this write's.
    if (this.turn.getStore() === collection) return once();
    if (this.closing) return Promise.reject(closedGate());
    return this.lane(collection).enqueue(once);
  }

  /**
   * Runs `section` as one turn of `collection`'s lane: no other write of the collection, in
   * this process or another, runs meanwhile, and the section's own gated writes to it run at
   * once. `epoch` changes whenever the lane took the cross-process lock anew, so a section can
   * tell whether another process may have written since its previous one. Sections must not
   * nest, nor write other gated collections (their lanes could wait for each other).
   */
  exclusive<T>(collection: string, section: (epoch: number) => Promise<T>): Promise<T> {
    if (this.closing) return Promise.reject(closedGate());
    const lane = this.lane(collection);
    return lane.enqueue(async () => {
      this.sections++;
      try {
        return await this.turn.run(collection, () => section(lane.epoch));
      } finally {
        // On Node 20 an enabled AsyncLocalStorage hooks every promise the process makes (about
        // twice the cost of each); the next section's run() enables it again.
        if (--this.sections === 0) this.turn.disable();
      }
    });
  }

  private lane(collection: string): Lane {
    let lane = this.lanes.get(collection);
    if (!lane) this.lanes.set(collection, (lane = new Lane(collection, this.locks, this.options.operationTimeoutMs)));
    return lane;
  }

  /**
   * Before the connection closes: refuses every write from now on (as the closed connection
   * would, "database unavailable"), then waits for the queued writes and their locks' release,
   * so that no lock is left for another replica to wait out (4 × the bound).
   */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.all([...this.lanes.values()].map((lane) => lane.settle()));
  }
}

interface Pending {
  start(): Promise<void>;
  fail(error: unknown): void;
}

/** The writes of one collection in this process, one at a time, under the collection's lock. */
class Lane {
  private readonly queue: Pending[] = [];
  private draining: Promise<void> | null = null;
  /** The last release, still under way (a new lock is taken only after it). */
  private released: Promise<void> = Promise.resolve();
  /** Counts the lock's takings (exclusive sections see it). */
  epoch = 0;

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
      this.draining ??= this.drain();
    });
  }

  async settle(): Promise<void> {
    await this.draining;
    await this.released;
  }

  private async drain(): Promise<void> {
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
        if (!lock) continue;
        this.epoch++;
        await this.holdWhileQueued(lock);
      }
    } finally {
      this.draining = null;
    }
  }

  /** Runs bursts of queued writes; between bursts keeps the lock unless another process wants it. */
  private async holdWhileQueued(lock: HeldLock): Promise<void> {
    for (;;) {
      const ends = Date.now() + BURST_MS;
      for (let n = 0; this.queue.length > 0 && n < BURST_WRITES && Date.now() < ends; n++) {
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

const closedGate = () => databaseUnavailable(new Error('the database connection is closing'));

/** FerretDB reports an update that breaks a unique index as an internal error; MongoDB as E11000. */
function asDuplicateKeyError(error: unknown): unknown {
  if (!(error instanceof MongoServerError) || error.code !== 1 || !/UNIQUE constraint failed/.test(error.message)) return error;
  const duplicate = new MongoServerError({ message: `E11000 duplicate key error (${error.message})`, code: 11000 });
  duplicate.cause = error;
  return duplicate;
}
