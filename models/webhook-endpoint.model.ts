import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// An endpoint that lifecycle events are POSTed to (src/lifecycle-webhooks/). The secret signs
// every delivery and is kept encrypted; after a rotation the previous one signs too until
// previousSecretUntil, so receivers can switch without a gap. An operator's endpoint (the CLI)
// belongs to ALL_USERS and hears every user's events.
export const WebhookEndpointSchema = new Schema(
  {
    _id: { type: String, required: true },
    userId: { type: String, required: true },
    url: { type: String, required: true },
    description: { type: String, default: null },
    // Empty: every event type.
    eventTypes: { type: [String], default: [] },
    secret: { type: String, required: true }, // ciphertext
    previousSecret: { type: String, default: null }, // ciphertext
    previousSecretUntil: { type: Date, default: null },
    createdAt: { type: Date, required: true, default: () => new Date() },
    updatedAt: { type: Date, required: true, default: () => new Date() },
  },
  { versionKey: false, strict: true, collection: 'webhook_endpoints' },
);
// A user's endpoints in creation order (the list, served without a sort; also the endpoints an event goes to).
WebhookEndpointSchema.index({ userId: 1, createdAt: 1, _id: 1 });

/** The owner of an operator's endpoints; no user id can take this form (USER_ID_PATTERN). */
export const ALL_USERS = '~all-users';

/** The encryption context of an endpoint's secrets (both the current and the previous one). */
export const endpointSecretContext = (endpointId: string) => `webhook-endpoint:${endpointId}:secret`;

export const webhookEndpointModel = (conn: Connection) => conn.model('WebhookEndpoint', WebhookEndpointSchema);
export type WebhookEndpointModel = ReturnType<typeof webhookEndpointModel>;
export type WebhookEndpointRecord = InferSchemaType<typeof WebhookEndpointSchema>;
