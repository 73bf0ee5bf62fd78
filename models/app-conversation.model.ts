import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// A V1 app conversation (docs/api.md). Its id is also the agent server's conversation id.
// It exists from the moment its start task does (startState "starting", no sandbox yet), so
// it is listed, readable and renamable while it starts, and its id belongs to its owner and,
// once known, to its sandbox from the first moment.
export const AppConversationSchema = new Schema(
  {
    _id: { type: String, required: true },
    userId: { type: String, required: true },
    sandboxId: { type: String, default: null },
    // starting → ready, or failed when its start task ended in ERROR. Records from before this
    // field existed were made when ready.
    startState: { type: String, enum: ['starting', 'ready', 'failed'], default: 'ready' },
    title: { type: String, default: null },
    // The user named it: a title the agent server reports afterwards does not replace it.
    titleByUser: { type: Boolean, default: false },
    selected_repository: { type: String, default: null },
    selected_branch: { type: String, default: null },
    git_provider: { type: String, default: null },
    trigger: { type: String, default: null },
    llm_model: { type: String, default: null },
    pr_number: { type: [Number], default: [] },
    parent_conversation_id: { type: String, default: null },
    // The combined MetricsSnapshot of the agent's last report that raised the cost (docs/budgets.md).
    metrics: { type: Schema.Types.Mixed, default: null },
    // Budgets (docs/budgets.md): the highest combined cost its agent server reported (reports are
    // cumulative, so only a higher one is kept), written only over the spendVersion read; the
    // conversation's own budget (null: the settings'); why it was stopped, while it is.
    accumulated_cost: { type: Number, default: 0 },
    spendVersion: { type: String, default: null },
    max_budget_per_task: { type: Number, default: null },
    budget_stop: { type: Schema.Types.Mixed, default: null },
    // Last status the agent server reported through webhooks (live status is asked for on reads).
    execution_status: { type: String, default: null },
    // Shared publicly (the 2026 clients' flag; this service serves it back, nothing more).
    public: { type: Boolean, default: null },
    // Key-value tags (lowercase alphanumeric keys), e.g. the agent profile a start launched from.
    tags: { type: Schema.Types.Mixed, default: () => ({}) },
    // The team organisation it was started in (docs/organizations.md); null: the personal one.
    orgId: { type: String, default: null },
    // Why the sandbox is gone when a lifecycle policy removed it (retention, lost workspace).
    sandbox_gone_reason: { type: String, default: null },
    createdAt: { type: Date, required: true, default: () => new Date() },
    updatedAt: { type: Date, required: true, default: () => new Date() },
  },
  { versionKey: false, strict: true, collection: 'app_conversations', minimize: false },
);
// A user's conversations newest first, ties by id (the search order, served without a sort).
AppConversationSchema.index({ userId: 1, createdAt: -1, _id: -1 });
AppConversationSchema.index({ sandboxId: 1 }); // a removed sandbox's conversations are marked
AppConversationSchema.index({ orgId: 1, createdAt: -1, _id: -1 }); // an organisation's conversations, for its admins
// The other orders of the V1 search (sort_order), ties by id.
AppConversationSchema.index({ userId: 1, updatedAt: -1, _id: -1 });
AppConversationSchema.index({ userId: 1, title: 1, _id: 1 });

export const appConversationModel = (conn: Connection) => conn.model('AppConversation', AppConversationSchema);
export type AppConversationModel = ReturnType<typeof appConversationModel>;
/** A stored app conversation as read with lean(). */
export type AppConversationRecord = InferSchemaType<typeof AppConversationSchema>;
