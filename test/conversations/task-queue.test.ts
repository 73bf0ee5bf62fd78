// The start-task claim reads the queue of unfinished tasks only: finished tasks (history) are
// never scanned by the poller, a task leaves the queue when it finishes, and entries that
// lost their task (a crash between the two writes, a deleted conversation) are cleared.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyText } from '../../src/crypto.js';
import { call, startTestApp, testDatabaseUri, uniqueDbName, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { FAKE_AGENT_SPEC, writeSpecsFile } from '../helpers/specs.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-queue-'));
const dbName = uniqueDbName('task-queue');
let app: TestApp;

beforeAll(async () => {
  app = await startTestApp('task-queue', {
    DATA_DIR: path.join(tmp, 'data'),
    MONGODB_URI: testDatabaseUri(dbName),
    ENCRYPTION_KEY: generateKeyText(),
    SANDBOX_SPECS_FILE: writeSpecsFile(tmp, [FAKE_AGENT_SPEC]),
    SANDBOX_MAX_RUNNING_PER_USER: '50',
    START_TASK_POLL_MS: '50',
    START_TASK_LEASE_MS: '10000',
  });
});
afterAll(async () => {
  await app.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const FINISHED = 300;

async function insertFinishedTasks(userId: string): Promise<void> {
  const now = Date.now();
  await app.rawCollection('start_tasks').insertMany(
    Array.from({ length: FINISHED }, (_, i) => {
      const id = `done${String(i).padStart(28, '0')}`;
      return {
        _id: id as never,
        userId,
        status: i % 2 ? 'READY' : 'ERROR',
        detail: null,
        app_conversation_id: null,
        sandbox_id: null,
        agent_server_url: null,
        request: {},
        mcpConfig: null,
        conversationId: id,
        attempts: 1,
        leaseOwner: null,
        leaseExpiresAt: null,
        createdAt: new Date(now - i * 1000),
        updatedAt: new Date(now - i * 1000),
      };
    }),
  );
}

/** The commands the service sent to a collection from index `from` on. */
const commandsOn = (collection: string, from: number) =>
  app.commands.slice(from).filter((c) => c.command[c.commandName] === collection && c.commandName !== 'insert');

describe('start-task claims', () => {
  it('poll the queue only: with finished tasks and nothing to do, no command touches the tasks', async () => {
    await insertFinishedTasks('history-user');
    const from = app.commands.length;
    // Several polls (every 50 ms): each asks the queue for due entries.
    await eventually('ten polls', async () => commandsOn('start_task_queue', from).length >= 10);
    expect(commandsOn('start_tasks', from)).toEqual([]);
    for (const poll of commandsOn('start_task_queue', from)) {
      expect(poll.commandName).toBe('find');
      expect(Object.keys(poll.command.filter as object)).toEqual(['dueAt']);
    }
  });

  it('claims a new task by its id, and the finished task leaves the queue', async () => {
    const key = await app.keyFor('queue-user');
    await call(app, 'POST', '/api/settings', { key, body: { llm_model: 'openai/stub', llm_api_key: 'sk-stub' } });
    const from = app.commands.length;
    const created = await call(app, 'POST', '/api/v1/app-conversations', { key, body: {} });
    const id = created.body.id as string;
    expect(await app.rawCollection('start_task_queue').findOne({ _id: id as never })).toMatchObject({ dueAt: expect.any(Date) });

    const ready = await eventually('the task to be READY', async () => {
      const [task] = (await call(app, 'GET', `/api/v1/app-conversations/start-tasks?ids=${id}`, { key })).body;
      return task?.status === 'READY' ? task : null;
    });
    expect(ready.status).toBe('READY');
    // The entry goes right after the READY write (the status first: a crash between leaves an entry the next claim settles).
    await eventually(
      'the entry to leave the queue',
      async () => (await app.rawCollection('start_task_queue').findOne({ _id: id as never })) === null,
    );
    // Every write the worker made to the task named it by id (the lease check rides along).
    const writes = commandsOn('start_tasks', from).filter((c) => c.commandName === 'findAndModify' || c.commandName === 'update');
    expect(writes.length).toBeGreaterThan(0);
    for (const write of writes) {
      const filter = (write.command.query ?? (write.command.updates as { q: object }[])[0]!.q) as Record<string, unknown>;
      expect(filter._id).toBe(id);
    }
  });

  it('clears queue entries whose task finished or is gone', async () => {
    const queue = app.rawCollection('start_task_queue');
    const longAgo = new Date(Date.now() - 10 * 60_000);
    await queue.insertMany([
      // finished, but the worker died before removing its entry
      { _id: 'done0000000000000000000000000001' as never, dueAt: longAgo, createdAt: longAgo },
      // its task was never written (a creation that failed half-way)
      { _id: 'gone0000000000000000000000000000' as never, dueAt: longAgo, createdAt: longAgo },
    ]);
    const ids = ['done0000000000000000000000000001', 'gone0000000000000000000000000000'];
    await eventually('both entries to be cleared', async () => (await queue.countDocuments({ _id: { $in: ids } as never })) === 0);
  });
});
