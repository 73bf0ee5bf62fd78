import { Schema, type Connection, type InferSchemaType } from 'mongoose';

// A conversation's way to its LLM through the gateway (src/llm-gateway/): the model and upstream
// its agent was given, its owner's key sealed (only the service opens it; the sandbox holds the
// conversation's gateway token instead), and what the gateway has counted so far. _id: the
// conversation's id. Totals only grow ($inc, one call at a time, each call counted once).
export const LlmRouteSchema = new Schema(
  {
    _id: { type: String, required: true },
    userId: { type: String, required: true },
    sandboxId: { type: String, required: true },
    model: { type: String, required: true },
    baseUrl: { type: String, default: null },
    apiKey: { type: String, default: null },
    // Remote MCP servers whose key (and header credentials, one sealed JSON) stay here: the agent calls /llm/mcp/<name> with the token.
    mcp: {
      type: [
        { _id: false, name: { type: String, required: true }, url: { type: String, required: true }, apiKey: String, headers: String },
      ],
      default: [],
    },
    // The conversation's gateway token: its SHA-256 to find it, sealed to hand the same one to a retried start.
    tokenHash: { type: String, required: true },
    token: { type: String, required: true },
    cost: { type: Number, default: 0 },
    calls: { type: Number, default: 0 },
    promptTokens: { type: Number, default: 0 },
    completionTokens: { type: Number, default: 0 },
    cacheReadTokens: { type: Number, default: 0 },
    cacheWriteTokens: { type: Number, default: 0 },
    reasoningTokens: { type: Number, default: 0 },
    updatedAt: { type: Date, required: true },
  },
  { versionKey: false, strict: true, collection: 'llm_routes' },
);

LlmRouteSchema.index({ sandboxId: 1 }); // a deleted sandbox's routes end together

export const llmRouteModel = (conn: Connection) => conn.model('LlmRoute', LlmRouteSchema);
export type LlmRouteRecord = InferSchemaType<typeof LlmRouteSchema>;
