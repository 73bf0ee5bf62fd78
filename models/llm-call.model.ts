import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// One call through the LLM gateway, written once when it ends (its _id is the gateway's own
// call id, so a retried write never counts it twice): the ledger behind a conversation's and a
// month's spend (src/llm-gateway/). Refused calls are written too, with no usage.
export const LlmCallSchema = new Schema(
  {
    _id: { type: String, required: true },
    conversationId: { type: String, required: true },
    userId: { type: String, required: true },
    model: { type: String, required: true },
    api: { type: String, required: true },
    outcome: { type: String, required: true },
    status: { type: Number, default: null },
    promptTokens: { type: Number, default: 0 },
    completionTokens: { type: Number, default: 0 },
    cacheReadTokens: { type: Number, default: 0 },
    cacheWriteTokens: { type: Number, default: 0 },
    cost: { type: Number, default: 0 },
    ms: { type: Number, default: 0 },
    at: { type: Date, required: true },
  },
  { versionKey: false, strict: true, collection: 'llm_calls' },
);

export const llmCallModel = (conn: Connection) => conn.model('LlmCall', LlmCallSchema);
export type LlmCallRecord = InferSchemaType<typeof LlmCallSchema>;
