import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// One decision taken by one replica (src/db/claims.ts): the key is the _id, so of several
// replicas inserting the same key exactly one succeeds, on either database, without the write
// gate that FerretDB's conditional updates need (src/db/write-gate/write-gate.ts). Claims older than an
// hour are pruned.
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
