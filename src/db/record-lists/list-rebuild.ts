// Builds the embedded layout's lists from the records themselves (record-layouts.ts derives
// every entry from a record): once when a database written by an earlier version is first
// opened (migrations.ts), and by the bench after seeding records in bulk. Each collection is
// rebuilt in one exclusive section of its lane, so no write of it lands in between.
import type { Models } from '../../../models/index.js';
import { compareEntries, type Entry } from './list-buckets.js';
import { CONVERSATION_LAYOUT, groupId, listId, SANDBOX_LAYOUT, TASK_LAYOUT, type Listed, type RecordLayout } from './record-layouts.js';
import type { RecordLists } from './record-lists.js';
import { tablesFor } from './record-tables.js';
import type { WriteGate } from '../write-gate/write-gate.js';
import type { AnyModel } from './record-table.js';

const comment = 'migration: the embedded lists from the records';
const GROUP_BATCH = 1000;

export type ListedCollection = 'conversations' | 'tasks' | 'sandboxes';

/** Rebuilds every list and group of these collections (all by default); returns the records read. */
export async function rebuildLists(models: Models, which: ListedCollection[] = ['conversations', 'tasks', 'sandboxes']): Promise<number> {
  const listed = tablesFor(models).listed;
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

/** Builds the lists once, when the database has records from before them (a marker records it). */
export async function buildListsOnce(models: Models, gate: WriteGate | null): Promise<void> {
  if (!gate) return;
  const markers = models.Claim.db.collection<{ _id: string; at: Date }>('migrations');
  if (await markers.findOne({ _id: 'record-lists' }, { comment })) return;
  await rebuildLists(models);
  await markers.updateOne({ _id: 'record-lists' }, { $set: { at: new Date() } }, { upsert: true, comment });
}
