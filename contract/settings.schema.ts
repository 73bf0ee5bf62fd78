// Settings (docs/api.md). The POST body is a partial update: an omitted field keeps its
// stored value; a present field replaces it. Unknown keys are ignored (the frontend sends
// read-only keys such as llm_api_key_set back), as in the reference.
import { z } from 'zod';
import { budgetAmount } from './budgets.schema.js';
import { jsonBool, jsonInt, ProviderTypeSchema } from './common.schema.js';
import { McpConfigInputSchema, McpConfigSchema } from './mcp.schema.js';

const nullableString = () => z.string().nullable().optional();

export const SaveSettingsInputSchema = z
  .object({
    language: nullableString(),
    agent: nullableString(),
    max_iterations: jsonInt().nullable().optional(),
    security_analyzer: nullableString(),
    confirmation_mode: jsonBool().nullable().optional(),
    llm_model: nullableString(),
    // Secrets: omitted or null keep the stored value; "" clears it.
    llm_api_key: nullableString(),
    llm_base_url: nullableString(),
    remote_runtime_resource_factor: jsonInt().nullable().optional(),
    enable_default_condenser: jsonBool().optional(),
    enable_sound_notifications: jsonBool().optional(),
    enable_proactive_conversation_starters: jsonBool().optional(),
    enable_solvability_analysis: jsonBool().optional(),
    user_consents_to_analytics: jsonBool().nullable().optional(),
    sandbox_base_container_image: nullableString(),
    sandbox_runtime_container_image: nullableString(),
    mcp_config: McpConfigInputSchema.nullable().optional(),
    search_api_key: nullableString(),
    sandbox_api_key: nullableString(),
    // Budgets (docs/budgets.md): per conversation, and per calendar month over all conversations.
    max_budget_per_task: budgetAmount().nullable().optional(),
    max_budget_per_month: budgetAmount().nullable().optional(),
    condenser_max_size: jsonInt()
      .pipe(z.number().refine((n) => n >= 20, 'Value error, condenser_max_size must be at least 20'))
      .nullable()
      .optional(),
    email: nullableString(),
    email_verified: jsonBool().nullable().optional(),
    git_user_name: nullableString(),
    git_user_email: nullableString(),
  })
  .meta({ id: 'SettingsInput' });
export type SaveSettingsInput = z.output<typeof SaveSettingsInputSchema>;

export const SettingsSchema = z
  .object({
    language: z.string().nullable(),
    agent: z.string().nullable(),
    max_iterations: z.number().nullable(),
    security_analyzer: z.string().nullable(),
    confirmation_mode: z.boolean().nullable(),
    llm_model: z.string().nullable(),
    llm_api_key: z.null(),
    llm_base_url: z.string().nullable(),
    remote_runtime_resource_factor: z.number().nullable(),
    secrets_store: z.object({ provider_tokens: z.object({}) }),
    enable_default_condenser: z.boolean(),
    enable_sound_notifications: z.boolean(),
    enable_proactive_conversation_starters: z.boolean(),
    enable_solvability_analysis: z.boolean(),
    user_consents_to_analytics: z.boolean().nullable(),
    sandbox_base_container_image: z.string().nullable(),
    sandbox_runtime_container_image: z.string().nullable(),
    mcp_config: McpConfigSchema.nullable(),
    search_api_key: z.null(),
    sandbox_api_key: z.null(),
    max_budget_per_task: z.number().nullable(),
    max_budget_per_month: z.number().nullable(),
    condenser_max_size: z.number().nullable(),
    email: z.string().nullable(),
    email_verified: z.boolean().nullable(),
    git_user_name: z.string().nullable(),
    git_user_email: z.string().nullable(),
    llm_api_key_set: z.boolean(),
    search_api_key_set: z.boolean(),
    provider_tokens_set: z.partialRecord(ProviderTypeSchema, z.string().nullable()),
  })
  .meta({ id: 'Settings' });
export type Settings = z.infer<typeof SettingsSchema>;
