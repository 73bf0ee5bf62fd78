// Exclusive decisions across replicas: a decision (work this start-task attempt, pause this
// sandbox as idle since T, hand this warm sandbox to a user) is taken by inserting its key;
// exactly one insert of a key succeeds, on MongoDB and on FerretDB alike, with nothing between
// (on FerretDB a conditional update is exclusive only through the write gate). The key names the state it was decided on, so a later state is a
// new decision. Claims older than an hour are pruned, which also lets a decision whose
// replica died between claiming and acting be taken again.
import type { Models } from '../../models/index.js';
import { isDuplicateKeyError } from '../errors.js';

export const CLAIM_RETENTION_MS = 60 * 60_000;

export class DecisionClaims {
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

  async prune(): Promise<void> {
    await this.models.Claim.deleteMany({ at: { $lt: new Date(this.now() - CLAIM_RETENTION_MS) } });
  }
}
