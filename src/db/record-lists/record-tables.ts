// The record tables of one database (record-table.ts): on the embedded FerretDB the listed
// ones (listed-table.ts), on MongoDB the indexed ones. Stores get theirs from their models,
// so every store of a connection shares one table (and one bucket cache) per collection.
import type { Collection } from 'mongodb';
import type { Connection } from 'mongoose';
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

const gates = new WeakMap<Connection, WriteGate | null>();
const tables = new WeakMap<Connection, RecordTables>();

/** Called once per connection (database.ts): the gate there decides which tables its stores get. */
export function registerGate(connection: Connection, gate: WriteGate | null): void {
  gates.set(connection, gate);
}

export function tablesFor(models: Models): RecordTables {
  const connection = models.RecordList.db;
  let found = tables.get(connection);
  if (!found) tables.set(connection, (found = createTables(models, gates.get(connection) ?? null)));
  return found;
}

function createTables(models: Models, gate: WriteGate | null): RecordTables {
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
