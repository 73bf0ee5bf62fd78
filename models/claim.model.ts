import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// One decision taken by one replica (src/db/claims.ts): the key is the _id, so of several
// replicas inserting the same key exactly one succeeds. (A conditional update is not
// exclusive on FerretDB, the embedded default: concurrent findOneAndUpdate calls with the
// same filter can all match and all write.) Claims older than an hour are pruned.
export const ClaimSchema = new Schema(
  {
    _id: { type: String, required: true },
    at: { type: Date, required: true },
  },
  { versionKey: false, strict: true, collection: 'claims' },
);
ClaimSchema.index({ at: 1 });

export const claimModel = (conn: Connection) => conn.model('Claim', ClaimSchema);
export type ClaimRecord = InferSchemaType<typeof ClaimSchema>;
