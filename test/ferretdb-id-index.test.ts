// The embedded FerretDB is built with its _id lookups changed (scripts/build-ferretdb.sh) so
// that SQLite narrows an _id equality or an $in of ids, alone or beside other conditions,
// through the collection's unique _id index instead of scanning the table. FerretDB's explain command answers SQLite's own query plan: this reads it
// from the test run's FerretDB (the same build the service runs) and checks that the lookups
// still find, update and delete the right documents.
import { MongoClient, ObjectId, type Collection } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDatabaseUri, uniqueDbName } from './helpers/app.js';

let client: MongoClient;
let docs: Collection<{ _id: string | ObjectId; n: number }>;

beforeAll(async () => {
  client = await new MongoClient(testDatabaseUri(uniqueDbName('id-index'))).connect();
  docs = client.db().collection('docs');
  const ids = ['first', 'a.b', '$dollar', 'with "quotes"', 'last'];
  await docs.insertMany(ids.map((_id, n) => ({ _id, n })));
});

afterAll(async () => {
  await client?.db().dropDatabase();
  await client?.close();
});

/** SQLite's plan for a find, as FerretDB's explain reports it. */
async function plan(filter: object): Promise<string> {
  const explained = await client.db().command({ explain: { find: 'docs', filter }, verbosity: 'queryPlanner' });
  return JSON.stringify(explained.queryPlanner);
}

describe('the embedded FerretDB build', () => {
  it('narrows an _id equality through the _id index (a string _id and an ObjectId)', async () => {
    expect(await plan({ _id: 'last' })).toMatch(/SEARCH \S+ USING INDEX \S+_id_/);
    expect(await plan({ _id: new ObjectId() })).toMatch(/SEARCH \S+ USING INDEX \S+_id_/);
    // Everything else is still a scan: what the index rule's callers must know.
    expect(await plan({ n: 1 })).toMatch(/SCAN/);
  });

  it('narrows an $in of ids and an _id beside other conditions through the index; other _id conditions scan', async () => {
    const indexed = /SEARCH \S+ USING INDEX \S+_id_/;
    expect(await plan({ _id: { $in: ['first', 'last', new ObjectId()] } })).toMatch(indexed);
    expect(await plan({ _id: 'last', n: 4 })).toMatch(indexed);
    expect(await plan({ _id: { $in: ['first', 'last'] }, n: { $gt: 0 } })).toMatch(indexed);
    for (const scanned of [
      { _id: { $in: ['first', 5] } },
      { _id: { $gt: 'a' } },
      { _id: { $in: [] } },
      { _id: { $in: ['a'], $ne: 'b' } },
    ]) {
      expect(await plan(scanned)).toMatch(/SCAN/);
    }
  });

  it('answers lookups narrowed by _id exactly as the whole filter says', async () => {
    const found = await docs.find({ _id: { $in: ['first', 'last', 'none', 'with "quotes"'] } }).toArray();
    expect(found.map((d) => d._id).sort()).toEqual(['first', 'last', 'with "quotes"']);
    // The other conditions still apply to the documents the ids name.
    expect(await docs.find({ _id: { $in: ['first', 'last'] }, n: { $gt: 0 } }).toArray()).toEqual([{ _id: 'last', n: 4 }]);
    expect(await docs.findOne({ _id: 'last', n: 0 })).toBeNull();
    expect(await docs.countDocuments({ _id: { $in: ['first', 'last', 'none'] } })).toBe(2);
    // An $in whose ids are not all strings or ObjectIds is still answered, by a scan.
    expect((await docs.find({ _id: { $in: ['first', 7 as unknown as string] } }).toArray()).map((d) => d._id)).toEqual(['first']);
  });

  it('finds, updates and deletes exactly the documents named, whatever their _id holds', async () => {
    for (const [n, _id] of ['first', 'a.b', '$dollar', 'with "quotes"', 'last'].entries()) {
      expect(await docs.findOne({ _id })).toEqual({ _id, n });
    }
    expect(await docs.findOne({ _id: 'a' })).toBeNull();
    const objectId = new ObjectId();
    await docs.insertOne({ _id: objectId, n: 9 });
    expect(await docs.findOne({ _id: objectId })).toEqual({ _id: objectId, n: 9 });

    expect((await docs.updateOne({ _id: 'a.b' }, { $set: { n: 10 } })).modifiedCount).toBe(1);
    expect((await docs.deleteOne({ _id: '$dollar' })).deletedCount).toBe(1);
    // Updates and deletes narrowed by an $in still check the rest of their filter.
    expect((await docs.updateMany({ _id: { $in: ['first', 'last'] }, n: { $gt: 0 } }, { $inc: { n: 0 } })).matchedCount).toBe(1);
    expect((await docs.deleteMany({ _id: { $in: ['first', 'last'] }, n: 99 })).deletedCount).toBe(0);
    expect((await docs.find({}).sort({ n: 1 }).toArray()).map((d) => [d._id, d.n])).toEqual([
      ['first', 0],
      ['with "quotes"', 3],
      ['last', 4],
      [objectId, 9],
      ['a.b', 10],
    ]);
    // The unique index still refuses a second document with the same _id.
    await expect(docs.insertOne({ _id: 'last', n: 11 })).rejects.toThrow(/duplicate key|E11000/);
  });
});
