// Removing a sandbox on a policy's decision (retention, a lost workspace): its record is
// first marked `deleting` (which also stops a resume racing the removal), then its
// conversations are told why the workspace is gone, then the runtime objects and the record
// are removed. Every step is idempotent, so a removal cut short is finished by a later pass.
import type { Models } from '../../../models/index.js';
import type { Logger } from '../../logger.js';
import type { SandboxRuntime } from '../runtime.js';
import type { ReleaseSlot } from '../service/sandbox-slots.js';
import { desiredChange } from '../service/sandbox-records.js';
import type { DecisionClaims } from '../../db/claims.js';
import type { RecordTables } from '../../db/record-lists/record-tables.js';

/** Marks the conversations of a removed sandbox with the reason (the conversation store does it). */
export type SandboxGoneListener = (sandboxId: string, reason: string) => Promise<void>;

export interface RemovalDeps {
  models: Models;
  /** The database's record tables (database.ts): the sandbox's record is removed through its table. */
  tables: RecordTables;
  runtime: SandboxRuntime;
  claims: DecisionClaims;
  onGone: SandboxGoneListener;
  releaseSlot: ReleaseSlot;
  log: Logger;
}

/** A removal stuck in `deleting` this long (its replica died) is taken over by the next pass. */
export const STUCK_REMOVAL_MS = 5 * 60_000;

/**
 * Takes the decision `claimKey` (one replica wins) and, if the sandbox still matches
 * `filter`, removes it. Returns false when another replica or a user got there first.
 */
export async function removeSandbox(
  deps: RemovalDeps,
  sandboxId: string,
  claimKey: string,
  filter: Record<string, unknown>,
  reason: string,
  now: Date,
): Promise<boolean> {
  if (!(await deps.claims.claim(claimKey))) return false;
  // Once marked `deleting` the removal is finished by whoever finds it stuck; before that, a
  // failure gives the claim back, so the decision is not left taken and undone for an hour.
  const claimed = await deps.claims.carryOut(claimKey, () =>
    deps.models.Sandbox.findOneAndUpdate(
      { ...filter, _id: sandboxId },
      { $set: desiredChange('deleting', { removalReason: reason }, now) },
    ).lean(),
  );
  if (!claimed) return false;
  await finishRemoval(deps, claimed.userId, sandboxId, reason);
  deps.log.info({ sandboxId, userId: claimed.userId, reason }, 'removed a sandbox');
  return true;
}

export async function finishRemoval(deps: RemovalDeps, userId: string, sandboxId: string, reason: string): Promise<void> {
  await deps.onGone(sandboxId, reason);
  await deps.runtime.remove(sandboxId);
  await deps.tables.sandboxes.remove(sandboxId, { desired: 'deleting' });
  await deps.releaseSlot(userId, sandboxId);
}
