import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// The claim queue of lifecycle webhooks (src/lifecycle-webhooks/lanes.ts): one small record per
// endpoint and resource with pending deliveries, so finding work never reads the delivery
// history. dueAt says when to look again (now, a retry's time, or the end of a worker's lease);
// the lease makes one replica at a time send a lane's deliveries, in order. `claims` numbers
// the claims (each is decided by inserting its key, src/db/claims.ts) of this `incarnation` of
// the lane (a lane removed when empty and made again by a later event is a new one, whose claim
// keys must not meet the old ones'); `wakes` counts the deliveries added, so a worker that
// found the lane empty removes it only if none came since. userId: the endpoint's owner, so
// claims can share the sending lanes fairly between users.
export const WebhookLaneSchema = new Schema(
  {
    _id: { type: String, required: true },
    endpointId: { type: String, required: true },
    userId: { type: String, default: null },
    resourceKey: { type: String, required: true },
    dueAt: { type: Date, required: true },
    leaseOwner: { type: String, default: null },
    leaseExpiresAt: { type: Date, default: null },
    incarnation: { type: String, default: null },
    claims: { type: Number, required: true, default: 0 },
    wakes: { type: Number, required: true, default: 0 },
  },
  { versionKey: false, strict: true, collection: 'webhook_lanes' },
);
WebhookLaneSchema.index({ dueAt: 1 });
// An endpoint's lanes (removed with it).
WebhookLaneSchema.index({ endpointId: 1 });

export const webhookLaneModel = (conn: Connection) => conn.model('WebhookLane', WebhookLaneSchema);
export type WebhookLaneModel = ReturnType<typeof webhookLaneModel>;
export type WebhookLaneRecord = InferSchemaType<typeof WebhookLaneSchema>;
