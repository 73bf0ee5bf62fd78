// The bucketed event storage against the real FerretDB: order, paging both ways, filters,
// counts, the per-conversation cap, retried batches, and reads that address buckets by _id.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase, type Database } from '../../src/db/database.js';
import { BUCKET_SIZE, EventStore, MAX_EVENT_CHARS, type EventLog } from '../../src/conversations/events/event-store.js';
import { testDatabaseUri, uniqueDbName } from '../helpers/app.js';

let db: Database;
let store: EventStore;
const CAP = 100;
const dbName = uniqueDbName('events');

beforeAll(async () => {
  db = await connectDatabase(testDatabaseUri(dbName), { operationTimeoutMs: 5_000 });
  store = new EventStore(db.models, CAP);
});
afterAll(async () => {
  await db.close();
});

const event = (i: number, kind = 'MessageEvent') => ({
  id: `ev-${i}`,
  kind,
  source: i % 2 ? 'agent' : 'user',
  timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString().replace('Z', ''),
});
const ids = (events: { id?: unknown }[]) => events.map((e) => e.id);
const log = async (id: string) => (await store.log(id)) as EventLog;
let counter = 0;
const conversation = () => `conv${++counter}${Math.random().toString(16).slice(2, 10)}`;

describe('event store', () => {
  it('keeps events in the order sent, pages both ways with a next position, and counts', async () => {
    const id = conversation();
    expect(
      await store.append(
        'alice',
        id,
        Array.from({ length: 50 }, (_, i) => event(i)),
      ),
    ).toBe(50);
    expect(
      await store.append(
        'alice',
        id,
        Array.from({ length: 25 }, (_, i) => event(50 + i)),
      ),
    ).toBe(25);
    const l = await log(id);
    expect(await store.count(l, {})).toBe(75);

    const seen: unknown[] = [];
    let from: number | null = null;
    do {
      const page: Awaited<ReturnType<EventStore['page']>> = await store.page(l, from, false, {}, 20);
      seen.push(...page.events.map((e) => JSON.parse(e.json).id));
      from = page.next;
    } while (from !== null);
    expect(seen).toEqual(Array.from({ length: 75 }, (_, i) => `ev-${i}`));

    const newest = await store.page(l, null, true, {}, 3);
    expect(newest.events.map((e) => JSON.parse(e.json).id)).toEqual(['ev-74', 'ev-73', 'ev-72']);
    expect(newest.next).toBe(71);
    // An unknown position starts over, as the reference does with an unknown page id.
    expect((await store.page(l, 10_000, false, {}, 1)).events[0]!.seq).toBe(0);
  });

  it('filters by kind and time, in pages and in counts', async () => {
    const id = conversation();
    await store.append(
      'alice',
      id,
      Array.from({ length: 70 }, (_, i) => event(i, i % 10 === 0 ? 'ConversationStateUpdateEvent' : 'ActionEvent')),
    );
    const l = await log(id);
    expect(await store.count(l, { kind: 'ConversationStateUpdateEvent' })).toBe(7);
    const page = await store.page(l, null, false, { kind: 'ConversationStateUpdateEvent' }, 5);
    expect(page.events.map((e) => e.seq)).toEqual([0, 10, 20, 30, 40]);
    expect(page.next).toBe(50);
    const gte = new Date(Date.UTC(2026, 0, 1, 0, 0, 60));
    const lt = new Date(Date.UTC(2026, 0, 1, 0, 1, 5));
    expect(await store.count(l, { gte, lt })).toBe(5);
    expect((await store.page(l, null, true, { gte }, 100)).events.map((e) => e.seq)).toEqual([69, 68, 67, 66, 65, 64, 63, 62, 61, 60]);
  });

  it('writes a retried batch to the same place instead of adding it twice', async () => {
    const id = conversation();
    const batch = [event(1), event(2), event(3)];
    expect(await store.append('alice', id, batch)).toBe(3);
    expect(await store.append('alice', id, [...batch, event(4)])).toBe(1);
    expect(ids((await store.page(await log(id), null, false, {}, 10)).events.map((e) => JSON.parse(e.json)))).toEqual([
      'ev-1',
      'ev-2',
      'ev-3',
      'ev-4',
    ]);
  });

  it('numbers batches sent at once without gaps or collisions', async () => {
    const id = conversation();
    await Promise.all(
      Array.from({ length: 6 }, (_, b) =>
        store.append(
          'alice',
          id,
          Array.from({ length: 5 }, (_, i) => event(b * 5 + i)),
        ),
      ),
    );
    const l = await log(id);
    expect(await store.count(l, {})).toBe(30);
    const all = (await store.page(l, null, false, {}, 100)).events;
    expect(all.map((e) => e.seq)).toEqual(Array.from({ length: 30 }, (_, i) => i));
    expect(new Set(all.map((e) => JSON.parse(e.json).id)).size).toBe(30);
  });

  it('numbers batches two replicas append at once, and remembers every batch for its retry', async () => {
    const replica = await connectDatabase(testDatabaseUri(dbName), { operationTimeoutMs: 5_000 });
    try {
      const stores = [store, new EventStore(replica.models, CAP)];
      const id = conversation();
      const batches = Array.from({ length: 8 }, (_, b) => Array.from({ length: 4 }, (_, i) => event(b * 4 + i)));
      await Promise.all(batches.map((batch, b) => stores[b % 2]!.append('alice', id, batch)));
      // Every batch retried, each on the other replica: nothing is added twice.
      const retried = await Promise.all(batches.map((batch, b) => stores[(b + 1) % 2]!.append('alice', id, batch)));
      expect(retried).toEqual(Array(8).fill(0));
      const all = (await store.page(await log(id), null, false, {}, 100)).events;
      expect(all.map((e) => e.seq)).toEqual(Array.from({ length: 32 }, (_, i) => i));
      expect(new Set(all.map((e) => JSON.parse(e.json).id)).size).toBe(32);
    } finally {
      await replica.close();
    }
  });

  it('keeps only the newest events beyond the cap and deletes whole buckets below it', async () => {
    const id = conversation();
    for (let b = 0; b < 5; b++)
      await store.append(
        'alice',
        id,
        Array.from({ length: 50 }, (_, i) => event(b * 50 + i)),
      );
    const l = await log(id);
    expect(await store.count(l, {})).toBe(CAP);
    const page = await store.page(l, null, false, {}, 2);
    expect(page.events.map((e) => JSON.parse(e.json).id)).toEqual(['ev-150', 'ev-151']);
    const buckets = await db.connection.collection('event_buckets').countDocuments({ _id: { $regex: `^${id}:` } as never });
    expect(buckets).toBeLessThanOrEqual(Math.ceil(CAP / BUCKET_SIZE) + 1);
  });

  it('stores an oversized event as a stub with its identity', async () => {
    const id = conversation();
    await store.append('alice', id, [{ ...event(1), kind: 'ObservationEvent', observation: { content: 'x'.repeat(MAX_EVENT_CHARS) } }]);
    const [stored] = (await store.page(await log(id), null, false, {}, 1)).events;
    expect(JSON.parse(stored!.json)).toEqual({
      id: 'ev-1',
      timestamp: event(1).timestamp,
      source: 'agent',
      kind: 'ObservationEvent',
      truncated: true,
    });
  });

  it('keeps keys MongoDB-wire servers refuse, and removes everything of a conversation', async () => {
    const id = conversation();
    const odd = { ...event(1), kind: 'SystemPromptEvent', tools: [{ parameters: { $ref: '#/x', 'a.b': 1, nul: 'a\u0000b' } }] };
    await store.append('alice', id, [odd]);
    expect(JSON.parse((await store.page(await log(id), null, false, {}, 1)).events[0]!.json)).toEqual(odd);
    await store.remove(id);
    expect(await store.log(id)).toBeNull();
    expect(await db.connection.collection('event_recent_ids').countDocuments({ _id: id as never })).toBe(0);
    expect(await db.connection.collection('event_buckets').countDocuments({ _id: `${id}:0` as never })).toBe(0);
  });

  it("refuses to write into another user's log", async () => {
    const id = conversation();
    await store.append('alice', id, [event(1)]);
    await expect(store.append('mallory', id, [event(2)])).rejects.toThrow(/another user/);
    expect(await store.count(await log(id), {})).toBe(1);
  });
});
