// Data moves run at start-up (service and CLI), idempotent and safe to run on several
// replicas at once. Each finishes by emptying what it moved, so later starts do nothing.
import type { Connection } from 'mongoose';
import type { Models } from '../../models/index.js';
import { isDuplicateKeyError } from '../errors.js';
import { buildListsOnce } from './record-lists/list-rebuild.js';
import type { RecordTables } from './record-lists/record-tables.js';

/**
 * Git provider tokens used to live in a collection of their own (one document per user); they
 * are now part of the user's settings document, so settings and tokens are read in one query.
 */
async function moveProviderTokensIntoSettings(connection: Connection, models: Models): Promise<void> {
  const legacy = connection.collection<{ userId: string; tokens?: unknown; updatedAt?: Date }>('git_provider_tokens');
  // One document at a time; the collection ends empty. (The comment marks the commands as this move's.)
  const comment = 'migration: git provider tokens into settings';
  for (let doc = await legacy.findOne({}, { comment }); doc; doc = await legacy.findOne({}, { comment })) {
    // Only where no tokens were stored since: a replica already running may have saved some.
    await models.Settings.collection
      .updateOne(
        { userId: doc.userId, providerTokens: null },
        { $set: { providerTokens: doc.tokens ?? {}, providerTokensUpdatedAt: doc.updatedAt ?? new Date() } },
        { upsert: true, comment },
      )
      .catch((error: unknown) => {
        if (!isDuplicateKeyError(error)) throw error; // the document exists, with tokens
      });
    await legacy.deleteOne({ _id: doc._id }, { comment });
  }
}

/**
 * Start tasks are claimed from a queue of unfinished tasks (start_task_queue); tasks left
 * unfinished by a version without it get their entries. Runs once: a marker records it.
 */
async function enqueueUnfinishedStartTasks(connection: Connection): Promise<void> {
  const comment = 'migration: unfinished start tasks into the claim queue';
  const markers = connection.collection<{ _id: string; at: Date }>('migrations');
  if (await markers.findOne({ _id: 'start-task-queue' }, { comment })) return;
  const queue = connection.collection<{ _id: string; dueAt: Date; createdAt: Date }>('start_task_queue');
  const now = new Date();
  const unfinished = connection
    .collection<{ _id: string; createdAt: Date }>('start_tasks')
    .find({ status: { $nin: ['READY', 'ERROR'] } }, { projection: { _id: 1, createdAt: 1 }, comment });
  for await (const task of unfinished) {
    await queue.updateOne({ _id: task._id }, { $setOnInsert: { dueAt: now, createdAt: task.createdAt } }, { upsert: true, comment });
  }
  await markers.updateOne({ _id: 'start-task-queue' }, { $set: { at: now } }, { upsert: true, comment });
}

/**
 * Sandboxes stored before the idle and retention policies have no lastUsedAt (running) or
 * desiredSince (paused): their time starts at this start-up. Here rather than in every pass:
 * on FerretDB an update by these fields reads every sandbox while it holds their write lane.
 */
async function startLifecycleClocks(models: Models): Promise<void> {
  const now = new Date();
  const comment = 'migration: lifecycle clocks of earlier sandboxes';
  await models.Sandbox.updateMany({ desired: 'running', lastUsedAt: null }, { $set: { lastUsedAt: now } }, { comment });
  await models.Sandbox.updateMany({ desired: 'paused', desiredSince: null }, { $set: { desiredSince: now } }, { comment });
}

export async function migrate(connection: Connection, models: Models, tables: RecordTables): Promise<void> {
  await moveProviderTokensIntoSettings(connection, models);
  await enqueueUnfinishedStartTasks(connection);
  await startLifecycleClocks(models);
  // On the embedded FerretDB: conversations, start tasks and sandboxes of an earlier version get
  // their lists, and lists of an earlier layout version are rebuilt.
  await buildListsOnce(models, tables);
}
