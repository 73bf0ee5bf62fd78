// Claiming start tasks from the claim queue (start_task_queue) against the real FerretDB: a
// user's starts are claimed in the order they were made, even when a claim reads the queue
// while the oldest one is still being written (its entry is written before its task). Found
// by the start-fairness test under load: the unwritten entry was pushed back a second, and the
// user's next start ran first.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase, type Database } from '../../src/db/database.js';
import { ConversationStore } from '../../src/conversations/records/store.js';
import { TaskQueue } from '../../src/conversations/records/task-queue.js';
import { newStartTask, type NewStartTask } from '../../src/conversations/records/queries.js';
import { SecretBox, generateKeyText } from '../../src/crypto.js';
import type { AppConversationStartRequest } from '../../contract/app-conversations.schema.js';
import { testDatabaseUri, uniqueDbName } from '../helpers/app.js';

let db: Database;
let store: ConversationStore;
let queue: TaskQueue;
let counter = 0;

beforeAll(async () => {
  db = await connectDatabase(testDatabaseUri(uniqueDbName('start-claims')), { operationTimeoutMs: 5_000 });
  store = new ConversationStore(db, SecretBox.fromStrings(generateKeyText()));
  queue = new TaskQueue(db.models.StartTaskQueue);
});
afterAll(async () => {
  await db?.close();
});

const newId = () => `task${++counter}${Math.random().toString(16).slice(2, 10)}`;

const startTask = (userId: string, id: string, createdAt: Date): NewStartTask => {
  const request = {} as AppConversationStartRequest;
  return { _id: id, userId, status: 'WORKING', request, conversationId: id, createdAt, updatedAt: createdAt };
};

async function createTask(userId: string, id = newId(), createdAt = new Date()): Promise<string> {
  await store.createTask(startTask(userId, id, createdAt), { mcpConfig: null, requestSecrets: null }, { tags: {} });
  return id;
}

const claim = async (passOver: string[] = []) => (await store.taskLeases.claim('test-worker', 60_000, passOver))?._id ?? null;

describe('claiming start tasks', () => {
  it("leaves a start whose task is still being written in its place: the user's later start waits, another user's runs", async () => {
    const created = new Date(Date.now() - 100);
    // Alice's first start: its queue entry is written, its task not yet.
    const first = newId();
    await queue.enqueue(first, 'alice', created);
    const second = await createTask('alice', newId(), new Date(created.getTime() + 10));
    const bobs = await createTask('bob', newId(), new Date(created.getTime() + 20));

    expect(await claim()).toBe(bobs);
    expect(await claim()).toBeNull(); // not Alice's second before her first
    // The first task is written (as createTask does after the entry): it goes first, then the second.
    await db.tables.tasks.insert(newStartTask(startTask('alice', first, created), { mcpConfig: null, requestSecrets: null }));
    expect(await db.models.StartTask.countDocuments({ _id: first })).toBe(1);
    expect(await claim()).toBe(first);
    expect(await claim()).toBe(second);
  });

  it('drops an entry whose task never came, once it is clearly orphaned', async () => {
    const orphan = newId();
    await queue.enqueue(orphan, 'carol', new Date(Date.now() - 61_000));
    const later = await createTask('carol');
    expect(await claim()).toBe(later);
    expect(await db.models.StartTaskQueue.countDocuments({ _id: orphan })).toBe(0);
  });
});
