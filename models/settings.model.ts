import { Schema, type Connection, type FlattenMaps, type InferSchemaType } from 'mongoose';

// MCP config mirrors docs/api.md fields (api_key, env and header values) hold ciphertext. A server
// saved in the 2026 shape (contract/mcp-servers.schema.ts) also keeps its name, its headers and
// the other fields as sent (extras: none of them a credential).
const remoteExtras = {
  name: { type: String, default: undefined },
  headers: { type: Map, of: String, default: undefined },
  extras: { type: Schema.Types.Mixed, default: undefined },
};
const SseServerSchema = new Schema(
  { url: { type: String, required: true }, api_key: { type: String, default: null }, ...remoteExtras },
  { _id: false },
);
const ShttpServerSchema = new Schema(
  {
    url: { type: String, required: true },
    api_key: { type: String, default: null },
    timeout: { type: Number, default: null },
    ...remoteExtras,
  },
  { _id: false },
);
const StdioServerSchema = new Schema(
  {
    name: { type: String, required: true },
    command: { type: String, required: true },
    args: { type: [String], default: [] },
    env: { type: Map, of: String, default: {} },
    extras: { type: Schema.Types.Mixed, default: undefined },
  },
  { _id: false },
);
// A saved LLM profile: its LLM keyword arguments without the key, and the key as ciphertext.
const LlmProfileSchema = new Schema(
  { name: { type: String, required: true }, config: { type: Schema.Types.Mixed, default: {} }, apiKey: { type: String, default: null } },
  { _id: false, minimize: false },
);

const McpConfigSchema = new Schema(
  {
    sse_servers: { type: [SseServerSchema], default: [] },
    stdio_servers: { type: [StdioServerSchema], default: [] },
    shttp_servers: { type: [ShttpServerSchema], default: [] },
  },
  { _id: false },
);

const ProviderTokenSchema = new Schema(
  {
    token: { type: String, required: true }, // ciphertext
    host: { type: String, default: null },
    user_id: { type: String, default: null },
  },
  { _id: false },
);
const ProviderTokensSchema = new Schema(
  {
    github: { type: ProviderTokenSchema, default: undefined },
    gitlab: { type: ProviderTokenSchema, default: undefined },
    bitbucket: { type: ProviderTokenSchema, default: undefined },
    enterprise_sso: { type: ProviderTokenSchema, default: undefined },
  },
  { _id: false },
);

// One document per user. Only fields the user has saved are present; defaults are applied
// when reading (src/services/settings/settings.service.ts), so a partial save never writes defaults over
// stored values. llm_api_key, search_api_key and sandbox_api_key hold ciphertext.
// The git provider tokens live here too, so reading settings (which reports them) is one
// query, and replacing the provider map stays one atomic update. updatedAt marks the last
// settings save: a document without it holds only provider tokens, and its settings read
// as not saved yet.
export const SettingsSchema = new Schema(
  {
    userId: { type: String, required: true, unique: true },
    language: String,
    agent: String,
    max_iterations: Number,
    security_analyzer: String,
    confirmation_mode: Boolean,
    llm_model: String,
    llm_api_key: String,
    llm_base_url: String,
    remote_runtime_resource_factor: Number,
    enable_default_condenser: Boolean,
    enable_sound_notifications: Boolean,
    enable_proactive_conversation_starters: Boolean,
    enable_solvability_analysis: Boolean,
    user_consents_to_analytics: Boolean,
    sandbox_base_container_image: String,
    sandbox_runtime_container_image: String,
    mcp_config: { type: McpConfigSchema, default: undefined },
    // A new random value with every write of mcp_config (and of providerTokens, below): a write
    // computed from what it read (masked MCP credentials, kept provider tokens, rotation)
    // applies only if the version is still the one it read, else it reads again.
    mcpVersion: String,
    search_api_key: String,
    sandbox_api_key: String,
    max_budget_per_task: Number,
    max_budget_per_month: Number,
    condenser_max_size: Number,
    email: String,
    email_verified: Boolean,
    git_user_name: String,
    git_user_email: String,
    updatedAt: Date,
    // The 2026 nested shape (/api/v1/settings) keeps its fields in the V0 ones above, except
    // the LLM keyword arguments V0 has no field for (temperature…), kept here as sent.
    llmExtra: { type: Schema.Types.Mixed, default: undefined },
    disabled_skills: { type: [String], default: undefined },
    git_full_clone: Boolean,
    // A model the gateway cannot front runs with the key in the sandbox (docs/llm-gateway.md).
    llm_key_in_sandbox: Boolean,
    // The 2026 settings of how conversations share sandboxes, the agent's marketplaces and the title prompt.
    sandbox_grouping_strategy: String,
    registered_marketplaces: { type: [Schema.Types.Mixed], default: undefined },
    title_generation_prompt: String,
    // LLM profiles (api keys as ciphertext) and agent profiles (no secrets: they name an LLM
    // profile), with the pointers to the active ones; profilesVersion guards their
    // read-modify-write (a rename of an LLM profile changes the agent profiles naming it too).
    llmProfiles: { type: [LlmProfileSchema], default: undefined },
    activeLlmProfile: { type: String, default: undefined },
    agentProfiles: { type: [Schema.Types.Mixed], default: undefined },
    activeAgentProfileId: { type: String, default: undefined },
    profilesVersion: String,
    providerTokens: { type: ProviderTokensSchema, default: undefined },
    providerTokensUpdatedAt: Date,
    providerTokensVersion: String,
  },
  { versionKey: false, strict: true, collection: 'settings', minimize: false },
);

export const settingsModel = (conn: Connection) => conn.model('Settings', SettingsSchema);
export type SettingsModel = ReturnType<typeof settingsModel>;
/** A stored settings document as read with lean() (Map fields become plain objects). */
export type SettingsRecord = FlattenMaps<InferSchemaType<typeof SettingsSchema>>;
