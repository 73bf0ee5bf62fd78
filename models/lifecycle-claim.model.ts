import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// One lifecycle decision taken by one replica (src/services/sandbox-lifecycle/claims.ts): the
// key is the _id, so of several replicas inserting the same key exactly one succeeds. (A
// conditional update is not exclusive on FerretDB, the embedded default: concurrent
// findOneAndUpdate calls with the same filter can all match.) Old claims are pruned.
export const LifecycleClaimSchema = new Schema(
  {
    _id: { type: String, required: true },
    at: { type: Date, required: true },
  },
  { versionKey: false, strict: true, collection: 'lifecycle_claims' },
);
LifecycleClaimSchema.index({ at: 1 });

export const lifecycleClaimModel = (conn: Connection) => conn.model('LifecycleClaim', LifecycleClaimSchema);
export type LifecycleClaimRecord = InferSchemaType<typeof LifecycleClaimSchema>;
