import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// One event for one endpoint: the outbox entry while pending, its history once delivered or
// given up (src/lifecycle-webhooks/). `seq` orders the deliveries of one resource to one
// endpoint (unique, so two replicas cannot give two events the same place); only the lowest
// pending one of a lane (endpoint + resource) is ever sent. The body is the JSON text sent,
// signed per attempt.
const AttemptSchema = new Schema(
  {
    attempt: { type: Number, required: true },
    at: { type: Date, required: true },
    statusCode: { type: Number, default: null },
    error: { type: String, default: null },
    durationMs: { type: Number, required: true },
  },
  { _id: false },
);

export const WebhookDeliverySchema = new Schema(
  {
    _id: { type: String, required: true },
    eventId: { type: String, required: true },
    eventType: { type: String, required: true },
    endpointId: { type: String, required: true },
    resourceKey: { type: String, required: true },
    seq: { type: Number, required: true },
    body: { type: String, required: true },
    status: { type: String, required: true, enum: ['pending', 'delivered', 'failed'] },
    // Attempts started (an attempt cut short by a crash counts: the next one has the next number).
    attemptCount: { type: Number, required: true, default: 0 },
    nextAttemptAt: { type: Date, default: null },
    attempts: { type: [AttemptSchema], default: [] },
    createdAt: { type: Date, required: true },
    finishedAt: { type: Date, default: null },
  },
  { versionKey: false, strict: true, collection: 'webhook_deliveries' },
);
// A lane's order, and its last place (the next event's seq).
WebhookDeliverySchema.index({ endpointId: 1, resourceKey: 1, seq: 1 }, { unique: true });
// A lane's next pending delivery.
WebhookDeliverySchema.index({ endpointId: 1, resourceKey: 1, status: 1, seq: 1 });
// An endpoint's history, newest first, all or by status.
WebhookDeliverySchema.index({ endpointId: 1, createdAt: -1, _id: -1 });
WebhookDeliverySchema.index({ endpointId: 1, status: 1, createdAt: -1, _id: -1 });
// Pruning the finished ones past WEBHOOK_HISTORY_DAYS.
WebhookDeliverySchema.index({ finishedAt: 1 });

export const webhookDeliveryModel = (conn: Connection) => conn.model('WebhookDelivery', WebhookDeliverySchema);
export type WebhookDeliveryModel = ReturnType<typeof webhookDeliveryModel>;
export type WebhookDeliveryRecord = InferSchemaType<typeof WebhookDeliverySchema>;
