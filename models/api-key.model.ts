import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// An API key is "<prefix>_<keyId>_<secret>". Only the SHA-256 of the secret part is stored;
// lookup is by key id, then the hashes are compared in constant time.
export const ApiKeySchema = new Schema(
  {
    _id: { type: String, required: true },
    userId: { type: String, required: true },
    secretHash: { type: String, required: true },
    label: { type: String, default: null },
    createdAt: { type: Date, required: true, default: () => new Date() },
    revokedAt: { type: Date, default: null },
    // Set by its user at creation (POST /api/keys expires_at); null: no end.
    expiresAt: { type: Date, default: null },
    // When it last authenticated, to the minute at best (api-keys.service.ts, USE_STAMP_MS).
    lastUsedAt: { type: Date, default: null },
    // Bound to an organisation (POST /api/keys org_id): it acts there whatever a request names.
    orgId: { type: String, default: null },
    // 'automation': the key the automation service acts with for this user in orgId
    // (src/automations/automation-access.ts), kept sealed too so the same key can be handed out again.
    purpose: { type: String, default: null },
    sealedKey: { type: String, default: null },
  },
  { versionKey: false, strict: true, collection: 'api_keys' },
);

ApiKeySchema.index({ userId: 1, createdAt: 1 }); // a user's keys, oldest first (CLI list)
ApiKeySchema.index({ revokedAt: 1 }); // "is there an active key" at start-up

/** What an automation key is sealed with (src/automations/automation-access.ts; re-wrapped by the rotation). */
export const automationKeyContext = (keyId: string) => `api-key:${keyId}:automation`;

export const apiKeyModel = (conn: Connection) => conn.model('ApiKey', ApiKeySchema);
export type ApiKeyModel = ReturnType<typeof apiKeyModel>;
/** A stored API key as read with lean(). */
export type ApiKeyRecord = InferSchemaType<typeof ApiKeySchema>;
