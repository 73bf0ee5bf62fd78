// The embedded lists' rebuild at start-up (src/db/record-lists/list-rebuild.ts) against the real
// FerretDB: the `record-lists` marker carries the layout version the lists were built with
// (RECORD_LISTS_VERSION, record-layouts.ts); a start that finds another version (or a marker of
// before versions) rebuilds them from the records, one that finds its own leaves them alone.
// Records written here past the record tables (raw inserts) are what only a rebuild lists.
import crypto from 'node:crypto';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IndexedSearches, searchesFor } from '../../src/conversations/records/searches.js';
import { connectDatabase, type Database } from '../../src/db/database.js';
import type { ListsMarker } from '../../src/db/record-lists/list-rebuild.js';
import { RECORD_LISTS_VERSION } from '../../src/db/record-lists/record-layouts.js';
import { testDatabaseUri, uniqueDbName } from '../helpers/app.js';

const dbName = uniqueDbName('list-rebuild');
const options = { operationTimeoutMs: 60_000 };
const opened: Database[] = [];
let client: MongoClient;

const hex = () => crypto.randomBytes(16).toString('hex');
const base = Date.UTC(2026, 0, 1);
let minute = 0;
const next = () => new Date(base + minute++ * 60_000);

function conversation(userId: string) {
  const at = next();
  return { _id: hex(), userId, title: `Conversation ${minute}`, parent_conversation_id: null, createdAt: at, updatedAt: at };
}
function task(userId: string) {
  const at = next();
  const conversationId = hex();
  return {
    _id: hex(),
    userId,
    status: 'READY',
    request: {},
    conversationId,
    app_conversation_id: conversationId,
    createdAt: at,
    updatedAt: at,
  };
}

/** Records written past the tables (as an earlier version's, or a bulk import's): no list has them. */
async function writeRaw(conversations: number, tasks: number): Promise<void> {
  if (conversations)
    await client
      .db()
      .collection('app_conversations')
      .insertMany(Array.from({ length: conversations }, () => conversation('ann')) as never[]);
  if (tasks)
    await client
      .db()
      .collection('start_tasks')
      .insertMany(Array.from({ length: tasks }, () => task('ann')) as never[]);
}

const markers = () => client.db().collection<ListsMarker>('migrations');

/** What the lists answer and what the records' own queries answer, for ann's conversations and tasks. */
async function answers(db: Database) {
  const both = [searchesFor(db), new IndexedSearches(db.models)];
  const [listed, indexed] = await Promise.all(
    both.map(async (s) => ({
      conversations: await s.countConversations('ann', { topLevelOnly: true }),
      page: (await s.conversations('ann', { topLevelOnly: true }, 0, 50, 'CREATED_AT_DESC')).map((r) => r._id),
      tasks: await s.countTasks('ann', {}),
      taskPage: (await s.tasks('ann', {}, 'UPDATED_AT_DESC', 0, 50)).map((r) => r._id),
    })),
  );
  return { listed: listed!, indexed: indexed! };
}

async function open(): Promise<Database> {
  const db = await connectDatabase(testDatabaseUri(dbName), options);
  opened.push(db);
  return db;
}

beforeAll(async () => {
  client = new MongoClient(testDatabaseUri(dbName));
  // An earlier version's records, no lists: the first start builds them and marks the version.
  await writeRaw(20, 6);
  const { listed, indexed } = await answers(await open());
  expect(listed).toEqual(indexed);
  expect(indexed.conversations).toBe(20);
}, 120_000);

afterAll(async () => {
  for (const db of opened) await db.close();
  await client?.close();
});

describe('the lists rebuilt by layout version', () => {
  it('marks the lists built with the current layout version', async () => {
    expect(await markers().findOne({ _id: 'record-lists' })).toMatchObject({ version: RECORD_LISTS_VERSION });
  });

  it('leaves the lists alone at a start that finds the current version', { timeout: 60_000 }, async () => {
    const before = await markers().findOne({ _id: 'record-lists' });
    await writeRaw(3, 2);
    const { listed, indexed } = await answers(await open());
    // Not rebuilt: the records written past the tables are not listed.
    expect(indexed.conversations - listed.conversations).toBe(3);
    expect(indexed.tasks - listed.tasks).toBe(2);
    expect(await markers().findOne({ _id: 'record-lists' })).toEqual(before);
  });

  it.each([
    ['an earlier layout version', { version: RECORD_LISTS_VERSION - 1 }],
    ['no version (a marker from before versions)', {}],
  ])('rebuilds the lists at a start that finds %s, and marks the current one', { timeout: 120_000 }, async (_, marker) => {
    await markers().replaceOne({ _id: 'record-lists' }, { at: new Date(base), ...marker }, { upsert: true });
    await writeRaw(4, 3);
    const db = await open();
    const { listed, indexed } = await answers(db);
    expect(listed.conversations).toBe(indexed.conversations);
    expect(listed).toEqual(indexed);
    expect(await markers().findOne({ _id: 'record-lists' })).toMatchObject({ version: RECORD_LISTS_VERSION });
    // The rebuilt lists go on taking writes through the tables.
    await db.tables.conversations.insert(conversation('ann'));
    const after = await answers(db);
    expect(after.listed).toEqual(after.indexed);
    expect(after.listed.conversations).toBe(indexed.conversations + 1);
  });
});
