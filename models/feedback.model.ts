import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// Feedback on a conversation (POST /api/conversations/{id}/submit-feedback). The reference
// forwards it, with the trajectory, to an external sharing service; here it stays with the
// service, owned by the user who gave it.
export const FeedbackSchema = new Schema(
  {
    _id: { type: String, required: true },
    userId: { type: String, required: true },
    conversationId: { type: String, required: true },
    polarity: { type: String, required: true },
    permissions: { type: String, required: true },
    email: { type: String, default: null },
    version: { type: String, default: null },
    /** How many events of the conversation were kept when the feedback was given. */
    eventCount: { type: Number, required: true, default: 0 },
    createdAt: { type: Date, required: true, default: () => new Date() },
  },
  { versionKey: false, strict: true, collection: 'feedback', minimize: false },
);
FeedbackSchema.index({ userId: 1, conversationId: 1 });

export const feedbackModel = (conn: Connection) => conn.model('Feedback', FeedbackSchema);
export type FeedbackRecord = InferSchemaType<typeof FeedbackSchema>;
