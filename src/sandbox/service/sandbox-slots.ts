// SANDBOX_MAX_RUNNING_PER_USER as a claim, not a count: a start or resume first takes one of the
// user's numbered slots by inserting "<userId>:<n>" (n below the limit), and exactly one of the
// inserts racing for a slot succeeds, on one replica or several and on either database. The
// slot names its sandbox and is freed when the sandbox stops running (pause, idle pause,
// delete, removal, a failed start). A slot whose sandbox stopped some other way (its agent
// server crashed, a replica died mid-start) is freed by the next start that finds every slot
// taken: it checks each holder and frees those no longer running, then tries again.
//
// At the limit (SANDBOX_AT_LIMIT): "refuse" answers 429 with Retry-After, and a conversation
// start claims its slot at the request (reserve), so a client is refused there rather than
// handed a start task that ends in ERROR; "pause-oldest" makes room instead: it pauses one of
// the user's running sandboxes (sandbox-room.ts) and claims the slot that frees.
import type { Models, SandboxRecord, SandboxSlotRecord } from '../../../models/index.js';
import { AppError, isDuplicateKeyError } from '../../errors.js';
import { newSandboxId } from './sandbox-records.js';
import type { ModelsAndTables, RecordTables } from '../../db/record-lists/record-tables.js';

/** A slot younger than this holds even without a running sandbox: its start or resume is under way. */
export const SLOT_START_GRACE_MS = 60_000;
const RETRY_AFTER_SECONDS = 30;

/** A sandbox's live state, as the sandboxes service reports it. */
export type StateOf = (record: SandboxRecord) => Promise<{ status: string }>;

export type AtLimit = 'refuse' | 'pause-oldest';

/** Pauses one of these running sandboxes of the user to free its slot; its id, or null when none could be. */
export type MakeRoom = (userId: string, running: string[]) => Promise<string | null>;

export class SandboxSlots {
  private readonly models: Models;
  private readonly records: RecordTables['sandboxes'];

  constructor(
    db: ModelsAndTables,
    private readonly max: number,
    private readonly stateOf: StateOf,
    /** SANDBOX_AT_LIMIT=pause-oldest: how room is made; null refuses. */
    private readonly makeRoom: MakeRoom | null = null,
    private readonly now: () => number = Date.now,
  ) {
    this.models = db.models;
    this.records = db.tables.sandboxes;
  }

  /** A slot for the sandbox (a new one's id, or one resuming; holding one already is enough), or 429. */
  async claim(userId: string, sandboxId: string): Promise<void> {
    // Each round frees at least one slot that had stopped, or ends; a few rounds bound a race.
    for (let round = 0; ; round++) {
      const slots = await this.slotsOf(userId);
      if (slots.some((s) => s.sandboxId === sandboxId)) return;
      if (slots.length < this.max && (await this.insertFree(userId, sandboxId, slots))) return;
      // Every slot is taken (or was, by racing starts): free the ones whose sandbox stopped.
      const { held, running } = await this.stillHeld(userId, await this.slotsOf(userId));
      // Making room frees a slot per round (a racing start may take it): bounded by the limit.
      const paused = held >= this.max && round < this.max + 3 && this.makeRoom ? await this.makeRoom(userId, running) : null;
      if (!paused && (held >= this.max || round >= 3)) {
        throw new AppError('TOO_MANY_REQUESTS', `Sandbox limit reached (${held} running)`, {
          reason: 'sandbox_limit_reached',
          retryAfterSeconds: RETRY_AFTER_SECONDS,
        });
      }
    }
  }

  /**
   * SANDBOX_AT_LIMIT=refuse: the slot a conversation start will need, claimed at its request (429
   * there): under a new id its cold start will use, or for the user's named sandbox unless that
   * one runs. Null when no slot is needed, or with pause-oldest (the start makes room itself).
   */
  async reserve(userId: string, sandboxId: string | null): Promise<string | null> {
    if (this.makeRoom) return null;
    if (sandboxId) {
      const record = await this.records.get(sandboxId, { userId });
      if (!record || (await this.runningAmong(userId, [sandboxId])).has(sandboxId)) return null;
    }
    const reserved = sandboxId ?? newSandboxId();
    await this.claim(userId, reserved);
    return reserved;
  }

  /** A reservation whose start ended: its slot is freed unless its sandbox runs. */
  async dropReservation(userId: string, reserved: string): Promise<void> {
    if (!(await this.runningAmong(userId, [reserved])).has(reserved)) await this.release(userId, reserved);
  }

  /** The reservation's slot now holds the sandbox it became (a claimed warm sandbox). */
  async move(userId: string, reservation: string, sandboxId: string): Promise<void> {
    await this.models.SandboxSlot.updateOne(
      { ...this.ofUser(userId), sandboxId: reservation },
      { $set: { sandboxId, at: new Date(this.now()) } },
    );
  }

  /**
   * The user's slots by their ids ("<userId>:<n>", n below the limit), so the embedded database
   * reads them through its _id index instead of scanning every user's slots: its build narrows an
   * _id $in of up to 1000 ids (scripts/ferretdb/id-lookups.patch), the most
   * SANDBOX_MAX_RUNNING_PER_USER allows.
   */
  private ofUser(userId: string): Record<string, unknown> {
    return { _id: { $in: Array.from({ length: this.max }, (_, n) => `${userId}:${n}`) }, userId };
  }

  private slotsOf(userId: string): Promise<SandboxSlotRecord[]> {
    return this.models.SandboxSlot.find(this.ofUser(userId)).lean();
  }

  /** Frees the slot of a sandbox that stopped running (also for the lifecycle policies), read by the user's slot ids. */
  async release(userId: string, sandboxId: string): Promise<void> {
    await this.models.SandboxSlot.deleteMany({ ...this.ofUser(userId), sandboxId });
  }

  /** Of the user's sandboxes with these ids, those running or starting. */
  private async runningAmong(userId: string, sandboxIds: string[]): Promise<Set<string>> {
    const records = await this.records.getMany(sandboxIds, { userId });
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

  /** Frees the slots whose sandbox no longer runs; how many still hold one, and the running ones past their start. */
  private async stillHeld(userId: string, slots: SandboxSlotRecord[]): Promise<{ held: number; running: string[] }> {
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
    return { held, running: [...running] };
  }
}

/** Frees a user's slot held by a sandbox that stopped running (SandboxSlots.release). */
export type ReleaseSlot = (userId: string, sandboxId: string) => Promise<void>;
