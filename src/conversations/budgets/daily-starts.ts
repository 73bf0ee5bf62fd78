// The daily conversation limit (DAILY_CONVERSATION_LIMIT; docs/budgets.md): conversations a user
// starts per UTC day, counted at the request by one $inc on the day's document and given back
// when the start is refused; past the limit the start answers 429 with the reference's detail
// (code daily_conversation_limit_reached, limit, used, reset_at) and Retry-After until midnight.
// Checked after the write, so two starts at once cannot both take the last one.
import type { QuotaStatus } from '../../../contract/quota.schema.js';
import type { Models } from '../../../models/index.js';
import { AppError, isDuplicateKeyError } from '../../errors.js';

const DAY_MS = 86_400_000;

export class DailyStarts {
  constructor(
    private readonly models: Models,
    private readonly limit: number | null,
    private readonly now: () => number = Date.now,
  ) {}

  async status(userId: string): Promise<QuotaStatus> {
    const { day, resetAt } = this.today();
    const stored = await this.models.DailyStart.collection.findOne({ _id: `${userId}:${day}` } as never, { projection: { count: 1 } });
    const used = typeof stored?.count === 'number' ? stored.count : 0;
    return {
      daily_limit: this.limit,
      used_today: used,
      remaining: this.limit === null ? null : Math.max(0, this.limit - used),
      reset_at: resetAt.toISOString(),
      work_email: null,
      work_email_verified: false,
      latest_request_status: null,
      latest_request_requested_limit: null,
    };
  }

  /** Counts a start of the user's; returns how to give it back (the start was refused after all). */
  async take(userId: string): Promise<() => Promise<void>> {
    const { day, resetAt } = this.today();
    const _id = `${userId}:${day}`;
    const count = await this.increment(_id, userId, day);
    const giveBack = async () => {
      await this.models.DailyStart.updateOne({ _id, count: { $gt: 0 } }, { $inc: { count: -1 } });
    };
    if (count === 1) void this.models.DailyStart.deleteMany({ userId, day: { $lt: day } }).catch(() => {});
    if (this.limit !== null && count > this.limit) {
      await giveBack();
      const retryAfterSeconds = Math.max(1, Math.ceil((resetAt.getTime() - this.now()) / 1000));
      throw new AppError('TOO_MANY_REQUESTS', `You have reached your limit of ${this.limit} conversations for today`, {
        reason: 'daily_conversation_limit_reached',
        retryAfterSeconds,
        fields: { limit: String(this.limit), used: String(this.limit), reset_at: resetAt.toISOString() },
      });
    }
    return giveBack;
  }

  private async increment(_id: string, userId: string, day: string): Promise<number> {
    for (let attempt = 0; ; attempt++) {
      try {
        const updated = await this.models.DailyStart.findOneAndUpdate(
          { _id },
          { $inc: { count: 1 }, $setOnInsert: { userId, day } },
          // No projection: FerretDB's findAndModify has none.
          { upsert: true, new: true },
        ).lean();
        return updated!.count;
      } catch (error) {
        // Two first starts of the day at once: one insert wins, the other increments it.
        if (!isDuplicateKeyError(error) || attempt > 0) throw error;
      }
    }
  }

  private today(): { day: string; resetAt: Date } {
    const midnight = Math.floor(this.now() / DAY_MS) * DAY_MS;
    return { day: new Date(midnight).toISOString().slice(0, 10), resetAt: new Date(midnight + DAY_MS) };
  }
}
