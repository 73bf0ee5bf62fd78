import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// The service's record of a sandbox; live status comes from the runtime. `desired` is what
// the owner (or a lifecycle policy) last asked for, so a stopped sandbox reads PAUSED only
// when paused on purpose; `deleting` marks a sandbox a policy is removing.
export const SandboxSchema = new Schema(
  {
    _id: { type: String, required: true },
    // The owner; warm-pool sandboxes belong to no user until claimed (WARM_POOL_OWNER).
    userId: { type: String, required: true },
    specId: { type: String, required: true },
    runtime: { type: String, required: true, enum: ['process', 'kubernetes'] },
    sessionApiKey: { type: String, required: true }, // ciphertext
    // SHA-256 (hex) of the session key: finds the sandbox a key belongs to without decrypting
    // every record (the key-only webhooks, sandbox-scoped secrets). Null on records of earlier
    // versions until the start-up pass fills it in (src/sandbox/service/sandbox-keys.ts).
    sessionKeyHash: { type: String, default: null },
    // Ciphertext of the agent server's OH_SECRET_KEY (it seals its stored secrets with it): kept
    // across resumes, while the session key is new on each. Null on records of earlier versions,
    // whose agent servers sealed with their session key: it is kept as this at their first resume.
    secretKey: { type: String, default: null },
    // Ciphertext (JSON) of the environment its agent server runs with: the secrets of the
    // conversation that started it (its hooks read them; docs/sandboxes.md). Null: none.
    sealedEnv: { type: String, default: null },
    // Started for the warm pool with deferred initialisation: its agent server waits for
    // POST /api/init, which the claim sends (with the claimant's environment).
    dormant: { type: Boolean, default: false },
    // 'automation': started for an automation run (by its automation key): the service is reached
    // inside at its own port and uv is on its PATH (docs/automation-service-notes.md). Null: any other.
    purpose: { type: String, enum: ['automation', null], default: null },
    desired: { type: String, required: true, enum: ['running', 'paused', 'deleting'] },
    // When `desired` last changed: retention counts paused time from here.
    desiredSince: { type: Date, default: null },
    // Who paused it: the owner, or the idle policy (shown as the status reason).
    pausedBy: { type: String, enum: ['user', 'idle', 'limit'], default: null },
    // Last use through this service (starts, resumes, webhooks, conversation routes); written at most once a minute.
    lastUsedAt: { type: Date, default: null },
    // Conversations whose agent last reported execution_status "running": never paused while non-empty.
    runningConversations: { type: [String], default: [] },
    // Why a policy is removing it (desired `deleting`), so another replica can finish the job.
    removalReason: { type: String, default: null },
    createdAt: { type: Date, required: true, default: () => new Date() },
    updatedAt: { type: Date, required: true, default: () => new Date() },
  },
  { versionKey: false, strict: true, collection: 'sandboxes' },
);
// A user's sandboxes newest first, ties by id (the search order, served without a sort).
SandboxSchema.index({ userId: 1, createdAt: -1, _id: -1 });
// The lifecycle policies' candidate queries: idle running sandboxes, long-paused ones.
SandboxSchema.index({ desired: 1, lastUsedAt: 1 });
SandboxSchema.index({ desired: 1, desiredSince: 1 });
// Which sandbox a presented session key belongs to, whoever owns it.
SandboxSchema.index({ sessionKeyHash: 1 });

/** The owner of warm-pool sandboxes until a start claims one; no user id can take this form (USER_ID_PATTERN). */
export const WARM_POOL_OWNER = '~warm-pool';

export const sandboxModel = (conn: Connection) => conn.model('Sandbox', SandboxSchema);
export type SandboxModel = ReturnType<typeof sandboxModel>;
/** A stored sandbox as read with lean(). */
export type SandboxRecord = InferSchemaType<typeof SandboxSchema>;
