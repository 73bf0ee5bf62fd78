// The write gate itself (src/db/write-gate/write-gate.ts) on the real FerretDB: the race it closes, that it
// covers model and driver-level writes across connections, how it answers when the lock is
// held by a process that died or by one that never lets go, and its upsert and
// unique-index rules.
import { spawn } from 'node:child_process';
import { MongoClient, MongoClientClosedError, MongoServerError } from 'mongodb';
import { afterAll, describe, expect, it } from 'vitest';
import { connectDatabase, type Database } from '../../src/db/database.js';
import { isDatabaseUnavailable } from '../../src/db/unavailable.js';
import { lockHost } from '../../src/db/write-gate/write-locks.js';
import { call, startTestApp, testDatabaseUri, uniqueDbName, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const step of cleanup.reverse()) await step();
});

async function app(label: string, env: Record<string, string> = {}): Promise<TestApp> {
  const started = await startTestApp(label, env);
  cleanup.push(() => started.stop());
  return started;
}

/** A pid no process has any more (a child that exited and was reaped). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.on('exit', resolve));
  return child.pid!;
}

/** A write_locks document as another gate would have inserted it (typed for the raw collection). */
const lockOf = (collection: string, fields: { _id: string; owner: string; pid: number }) =>
  ({ ...fields, name: collection, host: lockHost(), at: new Date(), wanted: false }) as unknown as { _id: never };

describe('the race the gate closes', () => {
  it('200 concurrent $inc of one document: FerretDB alone loses some; through gates on two connections none is lost, by any filter or by _id', async () => {
    const dbName = uniqueDbName('gate-race');
    const raw = new MongoClient(testDatabaseUri(dbName));
    cleanup.push(() => raw.close());
    const counters = raw.db().collection<{ _id: string; n: number }>('counters');
    // Ungated, FerretDB loses increments; how many depends on how the writes overlap, so a
    // round on a busy machine may lose none: up to ten rounds, until one does.
    let lost = 0;
    for (let round = 0; round < 10 && lost === 0; round++) {
      await counters.replaceOne({ _id: 'c' }, { n: 0 }, { upsert: true });
      await Promise.all(Array.from({ length: 200 }, () => counters.updateOne({ _id: 'c' }, { $inc: { n: 1 } })));
      lost = 200 - (await counters.findOne({ _id: 'c' }))!.n;
    }
    expect(lost).toBeGreaterThan(0);

    const replicas: Database[] = [];
    for (let i = 0; i < 2; i++) {
      const db = await connectDatabase(testDatabaseUri(dbName), { operationTimeoutMs: 5_000 });
      cleanup.push(() => db.close());
      replicas.push(db);
    }
    await replicas[0]!.models.Settings.create({ userId: 'counted', max_iterations: 0 });
    const before = replicas.map((db) => ({ ...db.writeGate!.stats }));
    // Model queries, Model.collection (driver level) and connection.collection alike, from both connections.
    const writes = Array.from({ length: 200 }, (_, i) => {
      const db = replicas[i % 2]!;
      const filter = { userId: 'counted' };
      const inc = { $inc: { max_iterations: 1 } };
      if (i % 3 === 0) return db.models.Settings.updateOne(filter, inc);
      if (i % 3 === 1) return db.models.Settings.collection.updateOne(filter, inc);
      return db.connection.collection('settings').findOneAndUpdate(filter, inc);
    });
    await Promise.all(writes);
    expect((await replicas[0]!.models.Settings.findOne({ userId: 'counted' }).lean())!.max_iterations).toBe(200);
    const stats = replicas.map((db, i) => ({
      writes: db.writeGate!.stats.writes - before[i]!.writes,
      locksTaken: db.writeGate!.stats.locksTaken - before[i]!.locksTaken,
    }));
    expect(stats.map((s) => s.writes)).toEqual([100, 100]);
    // Queued writes share a taking of the lock.
    for (const s of stats) expect(s.locksTaken).toBeLessThan(s.writes);
    // Each lock is released after its writers have their answers.
    await eventually(
      'the settings locks to be released',
      async () => (await raw.db().collection('write_locks').countDocuments({ name: 'settings' })) === 0,
    );

    // Writes by _id to two documents.
    await counters.insertMany([
      { _id: 'a', n: 0 },
      { _id: 'b', n: 0 },
    ]);
    await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        replicas[i % 2]!.connection.collection<{ _id: string; n: number }>('counters').updateOne(
          { _id: i % 3 ? 'a' : 'b' },
          { $inc: { n: 1 } },
        ),
      ),
    );
    expect(await counters.find({ _id: { $in: ['a', 'b'] } }).toArray()).toEqual([
      { _id: 'a', n: 133 },
      { _id: 'b', n: 67 },
    ]);
  });
});

describe('a lock whose holder is gone or stuck', () => {
  it('takes over at once a lock whose holder process on this host is dead', async () => {
    const service = await app('gate-dead');
    const key = await service.keyFor('after-death');
    await service.rawCollection('write_locks').insertOne(lockOf('settings', { _id: 'dead-holder', owner: 'gone', pid: await deadPid() }));
    const started = Date.now();
    expect((await call(service, 'POST', '/api/settings', { key, body: { language: 'fr' } })).status).toBe(200);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await service.rawCollection('write_locks').findOne({ _id: 'dead-holder' as never })).toBeNull();
    expect(service.server.deps.db.writeGate!.stats.takeovers).toBeGreaterThanOrEqual(1);
    expect((await call(service, 'GET', '/api/settings', { key })).body.language).toBe('fr');
  });

  it('a live holder that never lets go: writes answer 503 after the operation bound, reads still work, and after the stale time the lock is taken over', async () => {
    const bound = 400;
    const service = await app('gate-stuck', { DB_OPERATION_TIMEOUT_MS: String(bound) });
    const key = await service.keyFor('stuck');
    expect((await call(service, 'POST', '/api/settings', { key, body: { language: 'en' } })).status).toBe(200);
    const locks = service.rawCollection('write_locks');
    // The service lets its own lock go after answering (in the background): the other holder takes it after that.
    await eventually('the first write to release its lock', async () => (await locks.findOne({ name: 'settings' })) === null);
    await locks.insertOne(lockOf('settings', { _id: 'stuck-holder', owner: 'elsewhere', pid: process.pid }));

    const started = Date.now();
    const refused = await call(service, 'POST', '/api/settings', { key, body: { language: 'de' } });
    const waited = Date.now() - started;
    expect(refused.status).toBe(503);
    expect(refused.body).toEqual({ detail: 'Database unavailable, retry shortly' });
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(waited).toBeGreaterThanOrEqual(bound - 50);
    expect(waited).toBeLessThan(bound * 4);
    // The waiter asked the holder to let go; reads are not gated.
    expect((await locks.findOne({ _id: 'stuck-holder' as never }))?.wanted).toBe(true);
    expect((await call(service, 'GET', '/api/settings', { key })).body.language).toBe('en');

    // Seen unchanged for 4 × the bound, the lock is taken over and writes go through again.
    const saved = await eventually(
      'a write after the takeover',
      async () => (await call(service, 'POST', '/api/settings', { key, body: { language: 'de' } })).status === 200,
      20_000,
    );
    expect(saved).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(4 * bound);
    expect(await locks.findOne({ _id: 'stuck-holder' as never })).toBeNull();
    expect((await call(service, 'GET', '/api/settings', { key })).body.language).toBe('de');
  });

  it('a start-up that meets such a lock waits it out (its data moves answer 503 until the takeover) instead of failing', async () => {
    const bound = 400;
    const dbName = uniqueDbName('gate-start');
    const raw = new MongoClient(testDatabaseUri(dbName));
    cleanup.push(() => raw.close());
    // Every start-up's data moves update sandboxes (migrations.ts: the lifecycle clocks).
    await raw
      .db()
      .collection('write_locks')
      .insertOne(lockOf('sandboxes', { _id: 'stuck-at-start', owner: 'elsewhere', pid: process.pid }));
    const started = Date.now();
    const service = await startTestApp('gate-start', { DB_OPERATION_TIMEOUT_MS: String(bound) }, { dbName });
    cleanup.push(() => service.stop());
    expect(Date.now() - started).toBeGreaterThanOrEqual(4 * bound);
    expect(
      await raw
        .db()
        .collection('write_locks')
        .findOne({ _id: 'stuck-at-start' as never }),
    ).toBeNull();
    const key = await service.keyFor('after-start');
    expect((await call(service, 'POST', '/api/settings', { key, body: { language: 'fr' } })).status).toBe(200);
  });
});

describe('upserts and unique indexes', () => {
  it("retries an upsert whose insert collided once, not other writes, and reports FerretDB's unique violation on update as E11000", async () => {
    const service = await app('gate-rules');
    const gate = service.server.deps.db.writeGate!;
    const duplicate = () => new MongoServerError({ message: 'E11000 duplicate key error', code: 11000 });
    let calls = 0;
    const collidesOnce = async () => {
      if (++calls === 1) throw duplicate();
      return 'applied';
    };
    expect(await gate.run('settings', collidesOnce, true)).toBe('applied');
    expect(calls).toBe(2);
    calls = 0;
    await expect(gate.run('settings', collidesOnce, false)).rejects.toMatchObject({ code: 11000 });
    expect(calls).toBe(1);

    // A real one: renaming a secret onto a taken name through the model.
    const { CustomSecret } = service.server.deps.db.models;
    await CustomSecret.create({ userId: 'u', name: 'ONE', value: 'x' });
    await CustomSecret.create({ userId: 'u', name: 'TWO', value: 'y' });
    await expect(CustomSecret.updateOne({ userId: 'u', name: 'TWO' }, { $set: { name: 'ONE' } })).rejects.toMatchObject({ code: 11000 });
    expect((await CustomSecret.find({ userId: 'u' }).lean()).map((s) => s.name).sort()).toEqual(['ONE', 'TWO']);
  });
});

describe('closing', () => {
  it('leaves no lock behind: a write that meets the close is done or refused as unavailable, and another replica writes at once', async () => {
    const dbName = uniqueDbName('gate-close');
    const raw = new MongoClient(testDatabaseUri(dbName));
    cleanup.push(() => raw.close());
    const locks = raw.db().collection('write_locks');
    const other = await connectDatabase(testDatabaseUri(dbName), { operationTimeoutMs: 5_000 });
    cleanup.push(() => other.close());
    const unavailable = { code: 'SERVICE_UNAVAILABLE', reason: 'database_unavailable' };
    // Gated writes (updates) of two collections; the close comes a little later each round, so
    // that it meets them at each of their steps.
    for (let round = 0; round < 8; round++) {
      const closing = await connectDatabase(testDatabaseUri(dbName), { operationTimeoutMs: 5_000 });
      const { Settings, CustomSecret } = closing.models;
      const write = (name: string) =>
        Promise.allSettled([
          Settings.updateOne({ userId: name }, { $set: { max_iterations: round } }, { upsert: true }),
          CustomSecret.updateOne({ userId: name, name: 'S' }, { $set: { value: 'x' } }, { upsert: true }),
        ]);
      const before = write(`before-${round}`);
      for (let turn = 0; turn < round; turn++) await new Promise((resolve) => setImmediate(resolve));
      // An insert is not gated: one the close interrupts may or may not be stored, but it fails as an outage.
      const inserted = CustomSecret.create({ userId: `insert-${round}`, name: 'I', value: 'x' }).catch((error: unknown) => error);
      const closed = closing.close();
      const after = write(`after-${round}`); // sent once close() began: refused
      for (const [name, outcomes] of [
        [`before-${round}`, await before],
        [`after-${round}`, await after],
      ] as const) {
        for (const outcome of outcomes) if (outcome.status === 'rejected') expect(outcome.reason).toMatchObject(unavailable);
        // A refused write left nothing.
        const stored = [
          await raw.db().collection('settings').countDocuments({ userId: name }),
          await raw.db().collection('custom_secrets').countDocuments({ userId: name }),
        ];
        expect(stored).toEqual(outcomes.map((o) => (o.status === 'fulfilled' ? 1 : 0)));
      }
      expect((await after).map((o) => o.status)).toEqual(['rejected', 'rejected']);
      await closed;
      const insertError = await inserted;
      if (insertError instanceof Error) expect(insertError).toMatchObject(unavailable);
      expect(await locks.find().toArray()).toEqual([]);
    }
    // Which way an interrupted insert fails depends on timing; the driver's error for it is an outage either way.
    expect(isDatabaseUnavailable(new MongoClientClosedError())).toBe(true);
    // Nothing held: the other replica's writes of both collections start at once.
    const started = Date.now();
    await other.models.Settings.updateOne({ userId: 'other' }, { $set: { max_iterations: 1 } }, { upsert: true });
    await other.models.CustomSecret.create({ userId: 'other', name: 'S', value: 'y' });
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});
