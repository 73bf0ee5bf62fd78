// Builds the embedded layout's lists from the records themselves (record-layouts.ts derives
// every entry from a record): when a database whose lists are missing or of another layout
// version (RECORD_LISTS_VERSION, kept in the `record-lists` marker) is opened (migrations.ts),
// and by the bench after seeding records in bulk. Each collection is rebuilt in one exclusive
// section of its lane, so no write of it lands in between.
import type { Models } from '../../../models/index.js';
import { compareEntries, type Entry } from './list-buckets.js';
import {
  CONVERSATION_LAYOUT,
  groupId,
  listId,
  RECORD_LISTS_VERSION,
  SANDBOX_LAYOUT,
  TASK_LAYOUT,
  type Listed,
  type RecordLayout,
} from './record-layouts.js';
import type { RecordLists } from './record-lists.js';
import type { ModelsAndTables, RecordTables } from './record-tables.js';
import type { AnyModel } from './record-table.js';

const comment = 'migration: the embedded lists from the records';
const GROUP_BATCH = 1000;

export type ListedCollection = 'conversations' | 'tasks' | 'sandboxes';

/** Rebuilds every list and group of these collections (all by default); returns the records read. */
export async function rebuildLists(
  { models, tables }: ModelsAndTables,
  which: ListedCollection[] = ['conversations', 'tasks', 'sandboxes'],
): Promise<number> {
  const listed = tables.listed;
  if (!listed) return 0;
  const { lists, gate } = listed;
  const sources: Record<ListedCollection, [AnyModel, RecordLayout]> = {
    conversations: [models.AppConversation, CONVERSATION_LAYOUT],
    tasks: [models.StartTask, TASK_LAYOUT],
    sandboxes: [models.Sandbox, SANDBOX_LAYOUT],
  };
  let records = 0;
  for (const [model, layout] of which.map((name) => sources[name])) {
    records += await gate.exclusive(layout.lane, () => rebuildOne(models, model, layout, lists));
  }
  return records;
}

async function rebuildOne(models: Models, model: AnyModel, layout: RecordLayout, lists: RecordLists): Promise<number> {
  const docs = models.RecordList.collection;
  // What an earlier build (or a run cut off) left: the layout's lists, buckets and groups, and its lane's intent.
  const prefix = (text: string) => `^${text.replace(/[|~]/g, '\\$&')}`;
  for (const pattern of [prefix(`${layout.name}|`), prefix(`g|${layout.name}|`), prefix(`~intent|${layout.lane}`)]) {
    await docs.deleteMany({ _id: { $regex: pattern } } as never, { comment });
  }
  const entries = new Map<string, Entry[]>();
  const groups = new Map<string, string[]>();
  const projection = Object.fromEntries(layout.facts.map((field) => [field, 1]));
  let read = 0;
  for await (const record of model.collection.find({}, { projection, comment }) as AsyncIterable<Listed>) {
    read++;
    for (const order of layout.orders) {
      const id = listId(layout, layout.owner(record), order);
      (entries.get(id) ?? entries.set(id, []).get(id)!).push(layout.entry(record, order));
    }
    for (const group of layout.groups) {
      const key = layout.groupKey(record, group);
      if (key === null) continue;
      const id = groupId(layout, group, key);
      (groups.get(id) ?? groups.set(id, []).get(id)!).push(record._id);
    }
  }
  // Stamps from the clock: another process may hold buckets of an earlier build (same ids) in its cache.
  const stamp = Date.now();
  for (const [id, list] of entries) await lists.write(id, list.sort(compareEntries), layout.marked, stamp);
  // Groups were all deleted above: inserted in batches (a start task each has one of its own).
  const groupDocs = [...groups].map(([id, members]) => ({ _id: id, j: JSON.stringify([...new Set(members)].sort()) }));
  for (let from = 0; from < groupDocs.length; from += GROUP_BATCH) {
    await docs.insertMany(groupDocs.slice(from, from + GROUP_BATCH) as never[], { comment });
  }
  return read;
}

/** The `record-lists` marker in `migrations`: when the lists were last built, and of which layout version. */
export interface ListsMarker {
  _id: string;
  at: Date;
  /** RECORD_LISTS_VERSION when they were built; none in markers written before versions. */
  version?: number;
}

/**
 * Builds the lists once per layout version: when the database has records from before them, or
 * lists of another version than this one's (a marker without a version counts as another).
 */
export async function buildListsOnce(models: Models, tables: RecordTables): Promise<void> {
  if (!tables.listed) return;
  const markers = models.Claim.db.collection<ListsMarker>('migrations');
  const marker = await markers.findOne({ _id: 'record-lists' }, { comment });
  if (marker?.version === RECORD_LISTS_VERSION) return;
  await rebuildLists({ models, tables });
  const built = { at: new Date(), version: RECORD_LISTS_VERSION };
  await markers.updateOne({ _id: 'record-lists' }, { $set: built }, { upsert: true, comment });
}
