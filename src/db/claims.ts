// Exclusive decisions across replicas: a decision (work this start-task attempt, pause this
// sandbox as idle since T, hand this warm sandbox to a user) is taken by inserting its key;
// exactly one insert of a key succeeds, on MongoDB and on FerretDB alike, with nothing between
// (on FerretDB a conditional update is exclusive only through the write gate). The key names
// the state it was decided on, so a later state is a new decision. Claims older than an hour
// are pruned (within ten minutes more), which also lets a decision whose replica died between
// claiming and acting be taken again; a decision that failed gives its claim back at once.
import type { Models } from '../../models/index.js';
import { isDuplicateKeyError } from '../errors.js';

export const CLAIM_RETENTION_MS = 60 * 60_000;
/** Pruning reads every claim on the embedded database: once in a while is enough for an hour's retention. */
const PRUNE_EVERY_MS = CLAIM_RETENTION_MS / 6;

export class DecisionClaims {
  private lastPruned = -Infinity;

  constructor(
    private readonly models: Models,
    private readonly now: () => number = Date.now,
  ) {}

  /** True for exactly one caller per key. */
  async claim(key: string): Promise<boolean> {
    try {
      await this.models.Claim.create({ _id: key, at: new Date(this.now()) });
      return true;
    } catch (error) {
      if (isDuplicateKeyError(error)) return false;
      throw error;
    }
  }

  /** Gives back a decision that was not carried out, so it can be taken again. */
  async release(key: string): Promise<void> {
    await this.models.Claim.deleteOne({ _id: key });
  }

  /**
   * A step of the claimed decision `key`: when it fails the claim is given back (if even that
   * fails, the claim lapses at pruning), so a later pass takes the decision again instead of it
   * staying taken and undone; the failure is rethrown.
   */
  async carryOut<T>(key: string, step: () => PromiseLike<T>): Promise<T> {
    try {
      return await step();
    } catch (error) {
      await this.release(key).catch(() => {});
      throw error;
    }
  }

  /** Deletes claims past their retention, at most every PRUNE_EVERY_MS (each replica's retention pass asks). */
  async prune(): Promise<void> {
    const now = this.now();
    if (now - this.lastPruned < PRUNE_EVERY_MS) return;
    this.lastPruned = now;
    await this.models.Claim.deleteMany({ at: { $lt: new Date(now - CLAIM_RETENTION_MS) } });
  }
}
