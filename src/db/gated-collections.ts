// Puts every write of a connection through the write gate (write-gate.ts), whoever sends it:
// model queries, documents' save, Model.collection.* and connection.collection(...).* alike.
//
// The one reach into library internals, kept here: mongoose sends each of those to a driver
// Collection it obtains from `connection.db.collection(name)` (its NativeCollection calls the
// driver method of that object; mongoose 8, lib/drivers/node-mongodb-native/collection.js), and
// it asks again after a reconnect. Neither mongoose nor the driver has a hook that can hold an
// operation back, and query middleware would miss driver-level calls, so this file replaces
// `db.collection` on the connection's Db with one that returns collections whose update-class
// methods (and conditional deletes) run through the gate. assertGated checks at start-up that
// the models' collections really are gated, so a mongoose that changed this fails loudly.
import type { Collection, Db } from 'mongodb';
import type { Connection } from 'mongoose';
import type { Models } from '../../models/index.js';
import type { WriteGate } from './write-gate.js';

const GATED = Symbol('gated by the write gate');

/** Methods that read a document and write it back on FerretDB, with the position of their options (for `upsert`). */
const UPDATES: Record<string, number | null> = {
  updateOne: 2,
  updateMany: 2,
  replaceOne: 2,
  findOneAndUpdate: 2,
  findOneAndReplace: 2,
  bulkWrite: null,
};
/** FerretDB deletes what a query matched, by _id: a condition other than the _id can be stale by then. */
const DELETES = ['deleteOne', 'deleteMany', 'findOneAndDelete'];

type Method = (...args: unknown[]) => Promise<unknown>;

/** Gates the connection's collections, except those named in `exempt` (the lock collection itself). */
export function installWriteGate(connection: Connection, gate: WriteGate, exempt: readonly string[]): void {
  const db = connection.db as Db;
  const collection = db.collection.bind(db);
  db.collection = ((name: string, options?: object) => gateCollection(collection(name, options), gate, exempt)) as Db['collection'];
}

/** Throws unless every model's driver collection goes through the gate. */
export function assertGated(models: Models, exempt: readonly string[]): void {
  for (const model of Object.values(models)) {
    const driver = (model.collection as unknown as { collection: Collection | null }).collection;
    if (exempt.includes(model.collection.collectionName)) continue;
    if (!driver || !(driver as unknown as Record<symbol, boolean>)[GATED]) {
      throw new Error(
        `the write gate does not cover ${model.collection.collectionName}: mongoose no longer takes its collections from connection.db`,
      );
    }
  }
}

function gateCollection<T extends Collection>(collection: T, gate: WriteGate, exempt: readonly string[]): T {
  const methods = collection as unknown as Record<string | symbol, unknown>;
  if (methods[GATED] || exempt.includes(collection.collectionName)) return collection;
  const name = collection.collectionName;
  for (const [method, optionsAt] of Object.entries(UPDATES)) {
    const write = (methods[method] as Method).bind(collection);
    methods[method] = (...args: unknown[]) =>
      gate.run(name, () => write(...args), optionsAt !== null && (args[optionsAt] as { upsert?: boolean } | undefined)?.upsert === true);
  }
  for (const method of DELETES) {
    const remove = (methods[method] as Method).bind(collection);
    // By _id alone a delete decides nothing another write could change: no need to queue it.
    methods[method] = (...args: unknown[]) => (byIdOnly(args[0]) ? remove(...args) : gate.run(name, () => remove(...args), false));
  }
  methods[GATED] = true;
  return collection;
}

function byIdOnly(filter: unknown): boolean {
  if (typeof filter !== 'object' || filter === null) return false;
  const keys = Object.keys(filter);
  return keys.length === 1 && keys[0] === '_id';
}
