// SANDBOX_MAX_RUNNING_PER_USER as a claim, not a count: a start or resume first takes one of the
// user's numbered slots by inserting "<userId>:<n>" (n below the limit), and exactly one of the
// inserts racing for a slot succeeds, on one replica or several and on either database. The
// slot names its sandbox and is freed when the sandbox stops running (pause, idle pause,
// delete, removal, a failed start). A slot whose sandbox stopped some other way (its agent
// server crashed, a replica died mid-start) is freed by the next start that finds every slot
// taken: it checks each holder and frees those no longer running, then tries again.
import type { Models, SandboxRecord, SandboxSlotRecord } from '../../models/index.js';
import { AppError, isDuplicateKeyError } from '../errors.js';

/** A slot younger than this holds even without a running sandbox: its start or resume is under way. */
export const SLOT_START_GRACE_MS = 60_000;
const RETRY_AFTER_SECONDS = 30;

/** A sandbox's live state, as the sandboxes service reports it. */
export type StateOf = (record: SandboxRecord) => Promise<{ status: string }>;

export class SandboxSlots {
  constructor(
    private readonly models: Models,
    private readonly max: number,
    private readonly stateOf: StateOf,
    private readonly now: () => number = Date.now,
  ) {}

  /** A slot for the sandbox (a new one's id, or one resuming; holding one already is enough), or 429. */
  async claim(userId: string, sandboxId: string): Promise<void> {
    // Each round frees at least one slot that had stopped, or ends; a few rounds bound a race.
    for (let round = 0; ; round++) {
      const slots = await this.models.SandboxSlot.find({ userId }).lean();
      if (slots.some((s) => s.sandboxId === sandboxId)) return;
      if (slots.length < this.max && (await this.insertFree(userId, sandboxId, slots))) return;
      // Every slot is taken (or was, by racing starts): free the ones whose sandbox stopped.
      const held = await this.stillHeld(userId, await this.models.SandboxSlot.find({ userId }).lean());
      if (held >= this.max || round >= 3) {
        throw new AppError('TOO_MANY_REQUESTS', `Sandbox limit reached (${held} running)`, {
          reason: 'sandbox_limit_reached',
          retryAfterSeconds: RETRY_AFTER_SECONDS,
        });
      }
    }
  }

  /** The reservation's slot now holds the sandbox it became (a claimed warm sandbox). */
  async move(reservation: string, sandboxId: string): Promise<void> {
    await this.models.SandboxSlot.updateOne({ sandboxId: reservation }, { $set: { sandboxId, at: new Date(this.now()) } });
  }

  release(sandboxId: string): Promise<void> {
    return releaseSandboxSlot(this.models, sandboxId);
  }

  /** Of the user's sandboxes with these ids, those running or starting. */
  private async runningAmong(userId: string, sandboxIds: string[]): Promise<Set<string>> {
    const records = await this.models.Sandbox.find({ _id: { $in: sandboxIds }, userId }).lean();
    const states = await Promise.all(records.map(async (r) => [r._id, (await this.stateOf(r)).status] as const));
    return new Set(states.filter(([, status]) => status === 'RUNNING' || status === 'STARTING').map(([id]) => id));
  }

  private async insertFree(userId: string, sandboxId: string, slots: SandboxSlotRecord[]): Promise<boolean> {
    const taken = new Set(slots.map((s) => s.n));
    for (let n = 0; n < this.max; n++) {
      if (taken.has(n)) continue;
      try {
        await this.models.SandboxSlot.create({ _id: `${userId}:${n}`, userId, n, sandboxId, at: new Date(this.now()) });
        return true;
      } catch (error) {
        if (!isDuplicateKeyError(error)) throw error; // else another start took it first
      }
    }
    return false;
  }

  /** Frees the slots whose sandbox no longer runs; returns how many still hold one. */
  private async stillHeld(userId: string, slots: SandboxSlotRecord[]): Promise<number> {
    const settled = slots.filter((s) => this.now() - s.at.getTime() >= SLOT_START_GRACE_MS);
    const running = settled.length
      ? await this.runningAmong(
          userId,
          settled.map((s) => s.sandboxId),
        )
      : new Set<string>();
    let held = slots.length;
    for (const slot of settled) {
      if (running.has(slot.sandboxId)) continue;
      // Only if still this holder's: another start may have freed and taken it meanwhile.
      await this.models.SandboxSlot.deleteOne({ _id: slot._id, sandboxId: slot.sandboxId, at: slot.at });
      held--;
    }
    return held;
  }
}

/** Frees the slot of a sandbox that stopped running (also for the lifecycle policies). */
export async function releaseSandboxSlot(models: Models, sandboxId: string): Promise<void> {
  await models.SandboxSlot.deleteMany({ sandboxId });
}
