import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// A durable start task (docs/api.md). The lease makes exactly one
// replica work a task at a time; an expired lease lets another replica (or the restarted
// service) pick it up again.
export const StartTaskSchema = new Schema(
  {
    _id: { type: String, required: true },
    userId: { type: String, required: true },
    status: { type: String, required: true },
    detail: { type: String, default: null },
    app_conversation_id: { type: String, default: null },
    sandbox_id: { type: String, default: null },
    agent_server_url: { type: String, default: null },
    request: { type: Schema.Types.Mixed, required: true },
    // A per-conversation MCP override (V0 POST /api/conversations), encrypted: it holds credentials.
    mcpConfig: { type: String, default: null },
    // The start request's secrets ({name: value}), encrypted; the request keeps their names only.
    requestSecrets: { type: String, default: null },
    // A running slot claimed at the request (SANDBOX_AT_LIMIT=refuse), under the id a new sandbox gets.
    reservedSandboxId: { type: String, default: null },
    // The spec a new sandbox gets: the one for the client generation that started it (null: the default).
    sandboxSpecId: { type: String, default: null },
    // The team organisation it was started in (its LLM defaults apply; docs/organizations.md); null: personal.
    orgId: { type: String, default: null },
    // Chosen up front so creating the agent-server conversation is idempotent on retry.
    conversationId: { type: String, required: true },
    // When the task first entered each status ({WORKING: date, WAITING_FOR_SANDBOX: date, …}).
    phase_times: { type: Schema.Types.Mixed, default: () => ({}) },
    // Where its sandbox came from: warm_pool, cold_start, or existing (given or reused, resumed if paused).
    sandbox_source: { type: String, enum: ['warm_pool', 'cold_start', 'existing'], default: null },
    attempts: { type: Number, default: 0 },
    leaseOwner: { type: String, default: null },
    leaseExpiresAt: { type: Date, default: null },
    createdAt: { type: Date, required: true, default: () => new Date() },
    updatedAt: { type: Date, required: true, default: () => new Date() },
  },
  { versionKey: false, strict: true, collection: 'start_tasks', minimize: false },
);
// A user's tasks by creation or update time, ties by id (the search orders, either direction).
StartTaskSchema.index({ userId: 1, createdAt: 1, _id: 1 });
StartTaskSchema.index({ userId: 1, updatedAt: 1, _id: 1 });
// The tasks of one conversation, newest first.
StartTaskSchema.index({ userId: 1, conversationId: 1, createdAt: -1 });

export const startTaskModel = (conn: Connection) => conn.model('StartTask', StartTaskSchema);
export type StartTaskModel = ReturnType<typeof startTaskModel>;
/** A stored start task as read with lean(). */
export type StartTaskRecord = InferSchemaType<typeof StartTaskSchema>;
