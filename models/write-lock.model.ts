import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// The cross-process write lock of one collection on the embedded FerretDB (src/db/write-gate/write-gate.ts).
// An insert is the one exclusive step FerretDB has, so a lock is taken by inserting a document
// whose `name` (the collection) is unique; each taking has its own _id, so releasing or taking
// over deletes exactly that taking and never a later one.
export const WriteLockSchema = new Schema(
  {
    _id: { type: String, required: true },
    name: { type: String, required: true, unique: true },
    // Which gate holds it (one per database connection), and where it runs: a holder on this
    // host whose process is gone is taken over at once.
    owner: { type: String, required: true },
    host: { type: String, required: true },
    pid: { type: Number, required: true },
    at: { type: Date, required: true },
    // Set by a waiter of another gate: the holder lets go at the end of its burst.
    wanted: { type: Boolean, default: false },
  },
  { versionKey: false, strict: true, collection: 'write_locks' },
);

export const writeLockModel = (conn: Connection) => conn.model('WriteLock', WriteLockSchema);
export type WriteLockRecord = InferSchemaType<typeof WriteLockSchema>;
