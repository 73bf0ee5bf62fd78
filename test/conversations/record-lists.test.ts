// The embedded layout's lists (src/db/record-lists/record-lists.ts) against the real FerretDB: every
// search answered from the lists equals the same search answered by the records' own
// queries (IndexedSearches, the MongoDB path, run here as FerretDB's full scans), after
// the migration that builds the lists of records an earlier version wrote, after writes from
// two replicas at once, and after a write cut off midway. Bucket splits and merges are
// checked without a database in test/unit/list-buckets.test.ts.
import crypto from 'node:crypto';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConversationSortOrder } from '../../contract/app-conversations.schema.js';
import { connectDatabase, type Database } from '../../src/db/database.js';
import { CONVERSATION_LAYOUT } from '../../src/db/record-lists/record-layouts.js';
import { IndexedSearches, searchesFor, type Searches } from '../../src/conversations/records/searches.js';
import type { ConversationSearch } from '../../src/conversations/records/queries.js';
import { testDatabaseUri, uniqueDbName } from '../helpers/app.js';

const dbName = uniqueDbName('record-lists');
// Generous: the writes below queue up at once on a shared, loaded machine.
const options = { operationTimeoutMs: 60_000 };
const replicas: Database[] = [];
let listed: Searches;
let indexed: Searches;

afterAll(async () => {
  for (const db of replicas) await db.close();
});
const hex = () => crypto.randomBytes(16).toString('hex');
const pick = <T>(items: T[]) => items[Math.floor(Math.random() * items.length)]!;
const base = Date.UTC(2026, 0, 1);
// Few distinct times and titles, so ties (broken by id) are common.
const at = () => new Date(base + Math.floor(Math.random() * 40) * 60_000);
const TITLES = [null, 'Fix the build', 'fix tests', 'Ünïcode title', 'Add a feature', 'zeta', 'Alpha'];

function conversation(userId: string, parents: string[]) {
  return {
    _id: hex(),
    userId,
    title: pick(TITLES),
    sandboxId: pick([null, 'sb-1', 'sb-2', 'sb-3']),
    selected_repository: pick([null, 'acme/widgets', 'acme/gears']),
    trigger: pick([null, 'gui', 'resolver']),
    parent_conversation_id: parents.length > 0 && Math.random() < 0.2 ? pick(parents) : null,
    createdAt: at(),
    updatedAt: at(),
  };
}

const factsOf = (record: Record<string, unknown>) => Object.fromEntries(CONVERSATION_LAYOUT.facts.map((f) => [f, record[f] ?? null]));

const ORDERS: ConversationSortOrder[] = ['CREATED_AT', 'CREATED_AT_DESC', 'UPDATED_AT', 'UPDATED_AT_DESC', 'TITLE', 'TITLE_DESC'];
const iso = (minutes: number) => new Date(base + minutes * 60_000).toISOString();
const SEARCHES: ConversationSearch[] = [
  { topLevelOnly: true },
  { topLevelOnly: false },
  { topLevelOnly: true, title__contains: 'FIX' },
  { topLevelOnly: false, created_at__gte: iso(10), created_at__lt: iso(30) },
  { topLevelOnly: true, updated_at__gte: iso(5), updated_at__lt: iso(25) },
  { topLevelOnly: true, selected_repository: 'acme/widgets', trigger: 'gui' },
  { topLevelOnly: false, sandbox_id__eq: 'sb-2' },
];

/** Every search, order and a few pages give the same ids (and counts) both ways. */
async function expectSameAnswers(userId: string): Promise<void> {
  for (const search of SEARCHES) {
    expect(await listed.countConversations(userId, search), JSON.stringify(search)).toBe(await indexed.countConversations(userId, search));
    // Each order once per search, the first page and a deep one in turn.
    for (const [n, order] of ORDERS.entries()) {
      const [offset, limit] = n % 2 ? [37, 500] : [0, 20];
      const ids = async (s: Searches) => (await s.conversations(userId, search, offset, limit, order)).map((r) => r._id);
      expect(await ids(listed), `${JSON.stringify(search)} ${order} ${offset}`).toEqual(await ids(indexed));
    }
  }
  const parents = (await indexed.conversations(userId, { topLevelOnly: true }, 0, 5, 'CREATED_AT')).map((r) => r._id);
  const children = async (s: Searches) => (await s.subConversationsOf(userId, parents)).map((r) => r._id).sort();
  expect(await children(listed)).toEqual(await children(indexed));
  const inSandbox = async (s: Searches) => (await s.inSandbox(null, 'sb-1')).map((r) => r._id).sort();
  expect(await inSandbox(listed)).toEqual(await inSandbox(indexed));
}

describe('the embedded lists answer as the records do', () => {
  beforeAll(async () => {
    // Records an earlier version wrote (no lists yet): the first start builds the lists, once.
    const client = new MongoClient(testDatabaseUri(dbName));
    try {
      const parents = Array.from({ length: 30 }, () => conversation('alice', []));
      const rest = Array.from({ length: 370 }, (_, i) =>
        conversation(
          i % 8 === 0 ? 'bob' : 'alice',
          parents.map((c) => c._id),
        ),
      );
      await client
        .db()
        .collection('app_conversations')
        .insertMany([...parents, ...rest] as never[]);
      for (let i = 0; i < 2; i++) replicas.push(await connectDatabase(testDatabaseUri(dbName), options));
      expect(
        await client
          .db()
          .collection('migrations')
          .findOne({ _id: 'record-lists' as never }),
      ).not.toBeNull();
    } finally {
      await client.close();
    }
    listed = searchesFor(replicas[0]!);
    indexed = new IndexedSearches(replicas[0]!.models);
    expect(listed).not.toBeInstanceOf(IndexedSearches);
  }, 120_000);

  it('after the migration that builds them from the records', { timeout: 120_000 }, async () => {
    await expectSameAnswers('alice');
    await expectSameAnswers('bob');
  });

  it('after inserts, updates and deletes from two replicas at once', { timeout: 300_000 }, async () => {
    const [one, two] = replicas.map((db) => db.tables.conversations);
    const existing = (await indexed.conversations('alice', { topLevelOnly: false }, 0, 1000, 'CREATED_AT')).map((r) => r._id);
    const parents = existing.slice(0, 30);
    const writes: (() => Promise<unknown>)[] = [];
    for (let i = 0; i < 60; i++) {
      const table = i % 2 ? one! : two!;
      writes.push(() => table.insert(conversation(i % 6 === 0 ? 'bob' : 'alice', parents)));
      const id = existing[40 + i]!;
      // Renames, touches, moves between sandboxes, reparenting, and deletes.
      if (i % 5 === 0) writes.push(() => table.remove(id));
      else
        writes.push(() =>
          table.update(id, {}, { $set: { title: pick(TITLES), updatedAt: at(), sandboxId: pick(['sb-1', 'sb-3', null]) } }),
        );
      if (i % 10 === 1)
        writes.push(() => table.update(existing[200 + i]!, { userId: 'alice' }, { $set: { parent_conversation_id: null } }));
    }
    for (let from = 0; from < writes.length; from += 20) await Promise.all(writes.slice(from, from + 20).map((write) => write()));
    await expectSameAnswers('alice');
    await expectSameAnswers('bob');
  });

  it('finishes a write cut off between its record and its lists', { timeout: 120_000 }, async () => {
    const db = replicas[0]!;
    const table = db.tables.conversations;
    const record = await table.insert(conversation('carol', []));
    // A writer died after writing the record: its intent is left open and the lists are behind.
    const moved = new Date(base + 99 * 60_000);
    await db.models.RecordList.collection.replaceOne(
      { _id: '~intent|app_conversations' as never },
      { j: JSON.stringify({ id: record._id, before: factsOf(record) }) },
      { upsert: true },
    );
    await db.models.AppConversation.collection.updateOne({ _id: record._id as never }, { $set: { updatedAt: moved, title: 'renamed' } });
    // The other replica's next write of the collection (its lock is new) finishes the cut-off one first.
    await replicas[1]!.tables.conversations.insert(conversation('carol', []));
    const newest = await listed.conversations('carol', { topLevelOnly: true }, 0, 1, 'UPDATED_AT_DESC');
    expect(newest.map((r) => [r._id, r.title])).toEqual([[record._id, 'renamed']]);
    await expectSameAnswers('carol');
  });

  it('finishes a write cut off before its record was inserted (nothing to list), and the lane goes on', async () => {
    const db = replicas[0]!;
    // A writer died after opening its intent for a new record and before inserting it.
    await db.models.RecordList.collection.replaceOne(
      { _id: '~intent|app_conversations' as never },
      { j: JSON.stringify({ id: 'never-inserted', before: null }) },
      { upsert: true },
    );
    const table = replicas[1]!.tables.conversations;
    const record = await table.insert(conversation('dave', []));
    expect(await db.models.AppConversation.collection.findOne({ _id: 'never-inserted' as never })).toBeNull();
    expect(await db.models.RecordList.collection.findOne({ _id: '~intent|app_conversations' as never })).toBeNull();
    const newest = await listed.conversations('dave', { topLevelOnly: true }, 0, 5, 'UPDATED_AT_DESC');
    expect(newest.map((r) => r._id)).toEqual([record._id]);
    await expectSameAnswers('dave');
  });
});
