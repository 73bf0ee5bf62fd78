import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// A message queued for a conversation that is not ready yet (POST /api/v1/conversations/{id}/
// pending-messages), delivered to its agent server once it is. The _id is
// "<conversationId>:<n>" with n below the queue's limit (10), so inserting it is the claim: of
// messages racing for the last place, on one replica or several, exactly one insert succeeds.
// Delivery deletes a message before sending it, so two deliverers never send it twice.
export const PendingMessageSchema = new Schema(
  {
    _id: { type: String, required: true },
    // The id the client is given.
    messageId: { type: String, required: true },
    userId: { type: String, required: true },
    conversationId: { type: String, required: true },
    n: { type: Number, required: true },
    role: { type: String, required: true },
    content: { type: Schema.Types.Mixed, required: true },
    createdAt: { type: Date, required: true },
  },
  { versionKey: false, strict: true, collection: 'pending_messages', minimize: false },
);
// A conversation's queue in the order it was filled.
PendingMessageSchema.index({ conversationId: 1, createdAt: 1, _id: 1 });

export const pendingMessageModel = (conn: Connection) => conn.model('PendingMessage', PendingMessageSchema);
export type PendingMessageRecord = InferSchemaType<typeof PendingMessageSchema>;
