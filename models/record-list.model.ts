import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// The lists of the embedded FerretDB (src/db/record-lists/record-lists.ts), which narrows nothing but an
// _id equality: per owner and order, a directory document and bucket documents of entries
// (sort key, record id, the facts searches filter on), and per group (a sandbox's
// conversations, a task's conversation) the member ids. Every document is read and written by
// its _id; `j` holds the content as JSON text (one string costs FerretDB a fraction of the
// same content as subdocuments), `s` a bucket's stamp (the directory version that wrote it).
// Not used on MongoDB, where the records' own indexes serve the searches.
export const RecordListSchema = new Schema(
  {
    _id: { type: String, required: true },
    j: { type: String, required: true },
    s: { type: Number, default: null },
  },
  { versionKey: false, strict: true, collection: 'record_lists' },
);

export const recordListModel = (conn: Connection) => conn.model('RecordList', RecordListSchema);
export type RecordListRecord = InferSchemaType<typeof RecordListSchema>;
