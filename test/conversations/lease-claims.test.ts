// Exclusive claims on the real FerretDB: the start-task lease claim and the decision claims
// (src/db/claims.ts) hand each item to exactly one of several replicas claiming at once. A
// conditional findOneAndUpdate alone does not: FerretDB lets concurrent ones all match.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConversationStore } from '../../src/conversations/records/store.js';
import { DecisionClaims } from '../../src/db/claims.js';
import type { SecretBox } from '../../src/crypto.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

let first: TestApp;
let second: TestApp;

beforeAll(async () => {
  first = await startTestApp('claims');
  // A second connection to the same database, as another replica has.
  second = await startTestApp('claims-replica', { MONGODB_URI: first.server.deps.config.mongo.uri! });
  // Both services' own start-task queues would claim the tasks below too: stop them.
  await first.server.deps.services.startTasks.stop();
  await second.server.deps.services.startTasks.stop();
});

afterAll(async () => {
  await second?.stop();
  await first?.stop();
});

const storeOf = (app: TestApp) => {
  const { db } = app.server.deps;
  return new ConversationStore(db, undefined as unknown as SecretBox, new DecisionClaims(db.models));
};

describe('exclusive claims across replicas', () => {
  it('gives each due start task to exactly one of four concurrent claimers on two connections', async () => {
    const ids = Array.from({ length: 20 }, (_, i) => `lease${String(i).padStart(27, '0')}`);
    const now = new Date();
    await first.rawCollection('start_tasks').insertMany(
      ids.map((id, i) => ({
        _id: id as never,
        userId: 'claims-user',
        status: 'WORKING',
        request: {},
        conversationId: id,
        attempts: 0,
        leaseOwner: null,
        leaseExpiresAt: null,
        phase_times: {},
        createdAt: new Date(now.getTime() + i),
        updatedAt: now,
      })),
    );
    // Their claim-queue entries, as the service writes them with each task.
    await first
      .rawCollection('start_task_queue')
      .insertMany(ids.map((id, i) => ({ _id: id as never, dueAt: new Date(now.getTime() + i), createdAt: new Date(now.getTime() + i) })));
    const stores = [storeOf(first), storeOf(second), storeOf(first), storeOf(second)];
    const won = new Map<string, string[]>();
    for (let round = 0; round < ids.length; round++) {
      const results = await Promise.all(stores.map((store, i) => store.taskLeases.claim(`claimer-${i}`, 60_000, [])));
      for (const [i, task] of results.entries()) if (task) won.set(task._id, [...(won.get(task._id) ?? []), `claimer-${i}`]);
    }
    expect([...won.keys()].sort()).toEqual(ids);
    expect([...won.values()].filter((owners) => owners.length !== 1)).toEqual([]);
    const stored = await first
      .rawCollection('start_tasks')
      .find({ _id: { $in: ids } as never })
      .toArray();
    for (const task of stored) expect([task.leaseOwner]).toEqual(won.get(String(task._id)));
  });

  it('lets exactly one of concurrent decision claims win, and a new key is a new decision', async () => {
    const claims = [first, second, first, second].map((app) => new DecisionClaims(app.server.deps.db.models));
    for (let i = 0; i < 25; i++) {
      const results = await Promise.all(claims.map((c) => c.claim(`decision:${i}`)));
      expect(results.filter(Boolean)).toHaveLength(1);
    }
    expect(await claims[0]!.claim('decision:new')).toBe(true);
    expect(await claims[1]!.claim('decision:new')).toBe(false);
  });
});
