// Puts every write of a connection through the write gate (write-gate.ts), whoever sends it:
// model queries, documents' save, Model.collection.* and connection.collection(...).* alike.
//
// Neither mongoose nor the driver has a hook that can hold an operation back, and query
// middleware would miss driver-level calls, so the driver collections mongoose obtains are
// wrapped as it obtains them (src/library-internals.ts): their update-class methods (and
// conditional deletes) run through the gate. assertGated checks at start-up that the models'
// collections really are gated, so a mongoose that changed this fails loudly.
import type { Collection } from 'mongodb';
import type { Connection, Model } from 'mongoose';
import type { Models } from '../../../models/index.js';
import { driverCollectionOf, interceptCollections } from '../../library-internals.js';
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
  interceptCollections(connection, (collection) => gateCollection(collection, gate, exempt));
}

/** Throws unless every model's driver collection goes through the gate. */
export function assertGated(models: Models, exempt: readonly string[]): void {
  for (const model of Object.values(models)) {
    const driver = driverCollectionOf(model as unknown as Model<never>);
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
