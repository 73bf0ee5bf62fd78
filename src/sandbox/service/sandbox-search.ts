// A user's sandboxes newest first, a page at a time: on MongoDB one query its index serves;
// on the embedded FerretDB a walk of the owner's list (src/db/record-lists/record-lists.ts), then the
// page's records by id.
import type { SandboxRecord } from '../../../models/index.js';
import type { ModelsAndTables } from '../../db/record-lists/record-tables.js';

/** Up to `limit` sandboxes of the user from `offset`, newest first. */
export async function sandboxPage(
  { models, tables }: ModelsAndTables,
  userId: string,
  offset: number,
  limit: number,
): Promise<SandboxRecord[]> {
  const table = tables.listed?.sandboxes;
  if (!table) {
    return models.Sandbox.find({ userId }).sort({ createdAt: -1, _id: -1 }).skip(offset).limit(limit).lean();
  }
  for (let attempt = 0; ; attempt++) {
    const entries = await table.walk(userId, 'c', { descending: true, offset, limit, marked: false });
    const { records, stale } = await table.recordsOf(userId, 'c', entries);
    // A stale entry was repaired: the page is read once more.
    if (!stale || attempt > 0) return records;
  }
}

/** Every sandbox of an owner (a user, or the warm pool's): on the embedded database through the owner's list, not a scan of all sandboxes. */
export async function sandboxesOf(db: ModelsAndTables, owner: string): Promise<SandboxRecord[]> {
  if (!db.tables.listed) return db.models.Sandbox.find({ userId: owner }).lean();
  return sandboxPage(db, owner, 0, Number.MAX_SAFE_INTEGER);
}
