// The 2026 settings (/api/v1/settings, docs/api.md "2026 /api/v1 surface"): the same stored
// settings as V0 /api/settings in the nested shape (agent_settings, conversation_settings),
// saved as deep-merged diffs, and the user's LLM profiles. Field tables: settings-fields.ts.
import { z } from 'zod';
import { jsonBool, ProviderTypeSchema } from './common.schema.js';
import { McpServerMapSchema, McpSettingsInputSchema } from './mcp-servers.schema.js';
import { McpConfigSchema } from './mcp.schema.js';
import { SaveSettingsInputSchema } from './settings.schema.js';
import { AGENT_FIELDS, CONVERSATION_FIELDS, fieldsObject, LLM_FIELDS } from './settings-fields.js';

/**
 * What Agent Canvas's LLM forms send besides the schema's fields: how the LLM is reached. Their
 * defaults (an API key, no subscription, no provider connection) are what runs here and are not
 * stored; any other value cannot be honoured and is refused (422).
 */
export const FORM_ONLY_LLM_KEYS = ['auth_type', 'subscription_vendor', 'provider_connection_id'] as const;
const llmDiff = fieldsObject(LLM_FIELDS.map((field) => ({ name: field.name, field }))).extend({
  auth_type: z.literal('api_key').optional(),
  subscription_vendor: z.null().optional(),
  provider_connection_id: z.null().optional(),
});
const byKey = (key: string) => AGENT_FIELDS.find((field) => field.key === key)!;

export const AgentSettingsDiffSchema = z
  .strictObject({
    // Only the OpenHands agent runs here (no ACP agents).
    agent_kind: z.literal('openhands').optional(),
    agent: z.string().max(200).nullable().optional(),
    llm: llmDiff.optional(),
    condenser: fieldsObject([
      { name: 'enabled', field: byKey('condenser.enabled') },
      { name: 'max_size', field: byKey('condenser.max_size') },
    ]).optional(),
    // Replaced wholesale: the 2026 map or the V0 lists (masked credentials sent back keep the stored ones).
    mcp_config: McpSettingsInputSchema.nullable().optional(),
  })
  .meta({ id: 'AgentSettingsDiff' });
export type AgentSettingsDiff = z.output<typeof AgentSettingsDiffSchema>;

export const ConversationSettingsDiffSchema = fieldsObject(CONVERSATION_FIELDS.map((field) => ({ name: field.key, field }))).meta({
  id: 'ConversationSettingsDiff',
});
export type ConversationSettingsDiff = z.output<typeof ConversationSettingsDiffSchema>;

/** How conversations share sandboxes (the reference's SandboxGroupingStrategy; docs/api.md "Sandbox grouping"). */
export const SANDBOX_GROUPING_STRATEGIES = [
  'NO_GROUPING',
  'GROUP_BY_NEWEST',
  'LEAST_RECENTLY_USED',
  'FEWEST_CONVERSATIONS',
  'ADD_TO_ANY',
] as const;
export const SandboxGroupingStrategySchema = z.enum(SANDBOX_GROUPING_STRATEGIES);
export type SandboxGroupingStrategy = z.infer<typeof SandboxGroupingStrategySchema>;

/** A plugin marketplace the agent resolves plugins from (the SDK's MarketplaceRegistration). */
export const MarketplaceSchema = z
  .strictObject({
    name: z.string().trim().min(1).max(128),
    source: z.string().trim().min(1).max(2048),
    ref: z.string().trim().min(1).max(256).nullable().optional(),
    repo_path: z
      .string()
      .min(1)
      .max(1024)
      .refine(
        (p) => !p.includes('\\') && !p.startsWith('/') && !p.split('/').includes('..'),
        "repo_path must be relative, with '/' and no '..'",
      )
      .nullable()
      .optional(),
    auto_load: z.union([jsonBool(), z.array(z.string().max(256)).max(200)]).default(false),
  })
  .meta({ id: 'MarketplaceRegistration' });
export type Marketplace = z.output<typeof MarketplaceSchema>;
const MarketplaceOutSchema = z
  .object({
    name: z.string(),
    source: z.string(),
    ref: z.string().nullable().optional(),
    repo_path: z.string().nullable().optional(),
    auto_load: z.union([z.boolean(), z.array(z.string())]),
  })
  .meta({ id: 'Marketplace' });

/** The V0 fields the nested shape keeps at the top level (app preferences and the like). */
export const TOP_LEVEL_FIELDS = [
  'language',
  'remote_runtime_resource_factor',
  'enable_sound_notifications',
  'enable_proactive_conversation_starters',
  'enable_solvability_analysis',
  'user_consents_to_analytics',
  'sandbox_base_container_image',
  'sandbox_runtime_container_image',
  'search_api_key',
  'sandbox_api_key',
  'max_budget_per_task',
  'max_budget_per_month',
  'email',
  'email_verified',
  'git_user_name',
  'git_user_email',
  'mcp_config',
] as const;

/**
 * A partial dict: the diffs are deep-merged into what is stored, top-level keys replace.
 * Keys outside the contract are ignored, as the reference does (clients echo read-only keys);
 * agent_settings / conversation_settings themselves are refused by the service (422 with the keys).
 */
export const SaveSettingsV1InputSchema = SaveSettingsInputSchema.pick(
  Object.fromEntries(TOP_LEVEL_FIELDS.map((k) => [k, true])) as {
    [K in (typeof TOP_LEVEL_FIELDS)[number]]: true;
  },
)
  .extend({
    mcp_config: McpSettingsInputSchema.nullable().optional(),
    agent_settings_diff: AgentSettingsDiffSchema.nullable().optional(),
    conversation_settings_diff: ConversationSettingsDiffSchema.nullable().optional(),
    disabled_skills: z.array(z.string().max(200)).max(500).nullable().optional(),
    git_full_clone: jsonBool().optional(),
    // For a model the LLM gateway cannot front (AWS Bedrock, Vertex AI, Gemini): the key goes into
    // the conversation's sandbox, as the owner's explicit choice (docs/llm-gateway.md).
    llm_key_in_sandbox: jsonBool().optional(),
    sandbox_grouping_strategy: SandboxGroupingStrategySchema.nullable().optional(),
    registered_marketplaces: z.array(MarketplaceSchema).max(50).nullable().optional(),
    // The SDK makes a title with this profile's LLM inside the sandbox, which would put its key
    // there: titles are made by the conversation's own LLM, through the gateway (docs/api.md).
    title_llm_profile: z
      .string()
      .nullable()
      .optional()
      .refine(
        (name) => name == null,
        'A title LLM profile is not supported here: titles use the conversation’s own LLM, whose key stays in this service',
      ),
    title_generation_prompt: z.string().max(2000).nullable().optional(),
    agent_settings: z.unknown().optional(),
    conversation_settings: z.unknown().optional(),
  })
  .meta({ id: 'SettingsV1Input' });
export type SaveSettingsV1Input = z.output<typeof SaveSettingsV1InputSchema>;

const outLeaf = (type: string) => (type === 'boolean' ? z.boolean() : type === 'string' ? z.string() : z.number()).nullable().optional();

/** An LLM configuration as returned: api_key is never the key (null; see api_key_set). */
export const LlmConfigSchema = z
  .object({
    model: z.string().nullable(),
    api_key: z.string().nullable(),
    base_url: z.string().nullable(),
    ...Object.fromEntries(LLM_FIELDS.filter((f) => !f.v0).map((f) => [f.name, outLeaf(f.value_type)])),
  })
  .meta({ id: 'LlmConfig' });
export type LlmConfig = z.infer<typeof LlmConfigSchema>;

export const LlmProfilesSchema = z
  .object({ profiles: z.record(z.string(), LlmConfigSchema), active: z.string().nullable() })
  .meta({ id: 'LlmProfiles' });

export const AgentSettingsSchema = z
  .object({
    agent_kind: z.literal('openhands'),
    agent: z.string().nullable(),
    llm: LlmConfigSchema,
    condenser: z.object({ enabled: z.boolean(), max_size: z.number().nullable() }),
    mcp_config: McpServerMapSchema,
  })
  .meta({ id: 'AgentSettings' });

export const ConversationSettingsSchema = z
  .object({ max_iterations: z.number().nullable(), confirmation_mode: z.boolean().nullable(), security_analyzer: z.string().nullable() })
  .meta({ id: 'ConversationSettings' });

/** The nested fields shared by GET /api/v1/settings and GET /api/v1/users/me. */
export const nestedSettingsShape = {
  agent_settings: AgentSettingsSchema,
  conversation_settings: ConversationSettingsSchema,
  user_version: z.null(),
  disabled_skills: z.array(z.string()).nullable(),
  git_full_clone: z.boolean(),
  llm_key_in_sandbox: z.boolean(),
  v1_enabled: z.literal(true),
  sandbox_grouping_strategy: SandboxGroupingStrategySchema,
  llm_profiles: LlmProfilesSchema,
  active_agent_profile_id: z.string().nullable(),
  registered_marketplaces: z.array(MarketplaceOutSchema),
  // Marketplaces of the instance or organisation: none here.
  inherited_marketplaces: z.array(z.never()),
  title_llm_profile: z.null(),
  title_generation_prompt: z.string().nullable(),
};

export const SettingsV1Schema = z
  .object({
    language: z.string().nullable(),
    remote_runtime_resource_factor: z.number().nullable(),
    enable_sound_notifications: z.boolean(),
    enable_proactive_conversation_starters: z.boolean(),
    enable_solvability_analysis: z.boolean(),
    user_consents_to_analytics: z.boolean().nullable(),
    sandbox_base_container_image: z.string().nullable(),
    sandbox_runtime_container_image: z.string().nullable(),
    search_api_key: z.null(),
    sandbox_api_key: z.null(),
    max_budget_per_task: z.number().nullable(),
    max_budget_per_month: z.number().nullable(),
    email: z.string().nullable(),
    email_verified: z.boolean().nullable(),
    git_user_name: z.string().nullable(),
    git_user_email: z.string().nullable(),
    // The V0 lists, as the SDK workspace reads users/me (agent_settings.mcp_config is the 2026 map).
    mcp_config: McpConfigSchema.nullable(),
    ...nestedSettingsShape,
    llm_api_key_set: z.boolean(),
    search_api_key_set: z.boolean(),
    provider_tokens_set: z.partialRecord(ProviderTypeSchema, z.string().nullable()),
  })
  .meta({ id: 'SettingsV1' });
export type SettingsV1 = z.infer<typeof SettingsV1Schema>;

// LLM profiles (/api/v1/settings/profiles, and the same under the personal organisation).

/** The reference's profile names: letters, digits, ".", "_", "-"; 1-64 characters. */
export const ProfileNameSchema = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'String should match pattern ^[A-Za-z0-9._-]{1,64}$');

export const LlmConfigInputSchema = llmDiff.extend({ model: z.string().min(1).max(4096) }).meta({ id: 'LlmConfigInput' });
export type LlmConfigInput = z.output<typeof LlmConfigInputSchema>;

export const ProfileNameInputSchema = z.object({ name: ProfileNameSchema });

export const SaveProfileInputSchema = z.object({
  name: ProfileNameSchema,
  // Without llm, the current settings' LLM is saved under the name.
  llm: LlmConfigInputSchema.nullable().optional(),
  include_secrets: jsonBool().optional(),
  preserve_existing_api_key: jsonBool().optional(),
});
export type SaveProfileInput = z.output<typeof SaveProfileInputSchema>;

export const RenameProfileInputSchema = z.object({ name: ProfileNameSchema, new_name: ProfileNameSchema });

export const ProfileListSchema = z
  .object({
    profiles: z.array(
      z.object({ name: z.string(), model: z.string().nullable(), base_url: z.string().nullable(), api_key_set: z.boolean() }),
    ),
    active_profile: z.string().nullable(),
  })
  .meta({ id: 'LlmProfileList' });

export const ProfileDetailSchema = z
  .object({ name: z.string(), config: LlmConfigSchema, llm: LlmConfigSchema, api_key_set: z.boolean() })
  .meta({ id: 'LlmProfileDetail' });

export const ProfileMutationSchema = z.object({ name: z.string(), message: z.string() }).meta({ id: 'ProfileMutation' });

export const ActivateProfileSchema = z
  .object({ name: z.string(), message: z.string(), model: z.string().nullable(), llm: LlmConfigSchema })
  .meta({ id: 'ActivateLlmProfile' });
