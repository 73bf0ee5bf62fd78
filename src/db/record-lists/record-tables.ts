// The record tables of one database (record-table.ts): on the embedded FerretDB the listed
// ones (listed-table.ts), on MongoDB the indexed ones. Made once when the database is opened
// (database.ts) and carried on it as `tables`, so every store of a connection shares one
// table (and one bucket cache) per collection.
import type { Collection } from 'mongodb';
import type { AppConversationRecord, Models, SandboxRecord, StartTaskRecord } from '../../../models/index.js';
import { ListedTable } from './listed-table.js';
import { BucketCache, type ListDoc } from './list-reader.js';
import { CONVERSATION_LAYOUT, SANDBOX_LAYOUT, TASK_LAYOUT, type Listed } from './record-layouts.js';
import { RecordLists } from './record-lists.js';
import { IndexedTable, type RecordTable } from './record-table.js';
import type { WriteGate } from '../write-gate/write-gate.js';

/** Entries of list buckets kept in memory per connection (about 300 bytes each for conversations). */
const CACHED_ENTRIES = 100_000;

export type ConversationRow = AppConversationRecord & Listed;
export type TaskRow = StartTaskRecord & Listed;
export type SandboxRow = SandboxRecord & Listed;

export interface RecordTables {
  conversations: RecordTable<ConversationRow>;
  tasks: RecordTable<TaskRow>;
  sandboxes: RecordTable<SandboxRow>;
  /** The same tables with their lists, on the embedded FerretDB (null on MongoDB). */
  listed: ListedTables | null;
}

export interface ListedTables {
  conversations: ListedTable<ConversationRow>;
  tasks: ListedTable<TaskRow>;
  sandboxes: ListedTable<SandboxRow>;
  lists: RecordLists;
  gate: WriteGate;
}

/** The models and record tables of one database (its Database, database.ts): what its stores are made from. */
export interface ModelsAndTables {
  models: Models;
  tables: RecordTables;
}

/** A database's tables, made once when it is opened (database.ts): with a write gate (the embedded FerretDB) the listed ones. */
export function createTables(models: Models, gate: WriteGate | null): RecordTables {
  if (!gate) {
    return {
      conversations: new IndexedTable(models.AppConversation),
      tasks: new IndexedTable(models.StartTask),
      sandboxes: new IndexedTable(models.Sandbox),
      listed: null,
    };
  }
  const docs = models.RecordList.collection as unknown as Collection<ListDoc>;
  const lists = new RecordLists(docs, new BucketCache(CACHED_ENTRIES));
  const listed: ListedTables = {
    conversations: new ListedTable(models.AppConversation, CONVERSATION_LAYOUT, gate, lists),
    tasks: new ListedTable(models.StartTask, TASK_LAYOUT, gate, lists),
    sandboxes: new ListedTable(models.Sandbox, SANDBOX_LAYOUT, gate, lists),
    lists,
    gate,
  };
  return { ...listed, listed };
}
