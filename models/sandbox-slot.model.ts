import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// One of a user's SANDBOX_MAX_RUNNING_PER_USER running slots (src/sandbox/service/sandbox-slots.ts).
// The _id is "<userId>:<n>" with n below the limit, so inserting it is the claim: of starts
// racing for the last slot, on one replica or several, exactly one insert succeeds.
export const SandboxSlotSchema = new Schema(
  {
    _id: { type: String, required: true },
    userId: { type: String, required: true },
    n: { type: Number, required: true },
    // The sandbox running in it; a start holds the slot under a reservation id until it has one.
    sandboxId: { type: String, required: true },
    at: { type: Date, required: true },
  },
  { versionKey: false, strict: true, collection: 'sandbox_slots' },
);
SandboxSlotSchema.index({ userId: 1, n: 1 });

export const sandboxSlotModel = (conn: Connection) => conn.model('SandboxSlot', SandboxSlotSchema);
export type SandboxSlotRecord = InferSchemaType<typeof SandboxSlotSchema>;
