import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// The service's record of a sandbox; live status comes from the runtime. `desired` is what
// the owner last asked for, so a stopped sandbox reads PAUSED only when paused on purpose.
export const SandboxSchema = new Schema(
  {
    _id: { type: String, required: true },
    userId: { type: String, required: true },
    specId: { type: String, required: true },
    runtime: { type: String, required: true, enum: ['process', 'kubernetes'] },
    sessionApiKey: { type: String, required: true }, // ciphertext
    desired: { type: String, required: true, enum: ['running', 'paused'] },
    createdAt: { type: Date, required: true, default: () => new Date() },
    updatedAt: { type: Date, required: true, default: () => new Date() },
  },
  { versionKey: false, strict: true, collection: 'sandboxes' },
);
// A user's sandboxes newest first, ties by id (the search order, served without a sort).
SandboxSchema.index({ userId: 1, createdAt: -1, _id: -1 });

export const sandboxModel = (conn: Connection) => conn.model('Sandbox', SandboxSchema);
export type SandboxModel = ReturnType<typeof sandboxModel>;
/** A stored sandbox as read with lean(). */
export type SandboxRecord = InferSchemaType<typeof SandboxSchema>;
