// The account routes today's clients call (docs/api.md "2026 /api/v1 surface"): the key a
// request authenticated with, the user (with the SDK workspace's fields), the automation
// routes' "not available", the web client's configuration, and the model, provider and skill
// searches.
import { z } from 'zod';
import { pagingShape as paging, queryBool } from './common.schema.js';
import { McpConfigSchema } from './mcp.schema.js';
import { SettingsSchema } from './settings.schema.js';
import { nestedSettingsShape } from './settings-v1.schema.js';

export const ApiKeyCurrentSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    org_id: z.string().nullable(),
    bound_org_id: z.string().nullable(),
    user_id: z.string(),
    auth_type: z.string(),
  })
  .meta({ id: 'ApiKeyCurrent' });

export const ByorKeySchema = z.object({ key: z.string().nullable() }).meta({ id: 'ByorKey' });

export const AutomationHealthSchema = z
  .object({ status: z.enum(['ok', 'error']), message: z.string().optional() })
  .meta({ id: 'AutomationHealth' });
export const AutomationSdkVersionSchema = z
  .object({ sdk_version: z.string().nullable(), version: z.string().nullable(), message: z.string().optional() })
  .meta({ id: 'AutomationSdkVersion' });

export const WebClientConfigSchema = z
  .object({
    app_mode: z.literal('oss'),
    posthog_client_key: z.string().nullable(),
    feature_flags: z.object({
      enable_billing: z.boolean(),
      hide_llm_settings: z.boolean(),
      enable_jira: z.boolean(),
      enable_jira_dc: z.boolean(),
      enable_linear: z.boolean(),
      hide_users_page: z.boolean(),
      hide_billing_page: z.boolean(),
      hide_integrations_page: z.boolean(),
      hide_personal_workspaces: z.boolean(),
      allow_user_llm_configuration: z.boolean(),
      enable_acp: z.boolean(),
      deployment_mode: z.string().nullable(),
      enable_onboarding: z.boolean(),
      enable_automations: z.boolean(),
    }),
    providers_configured: z.array(z.string()),
    maintenance_start_time: z.string().nullable(),
    auth_url: z.string().nullable(),
    recaptcha_site_key: z.string().nullable(),
    faulty_models: z.array(z.string()),
    error_message: z.string().nullable(),
    updated_at: z.string(),
    github_app_slug: z.string().nullable(),
    gitlab_enabled: z.boolean(),
    provider_default_hosts: z.record(z.string(), z.string()),
    slack_enabled: z.boolean(),
    email_enabled: z.boolean(),
    acp_providers: z.array(z.never()),
  })
  .meta({ id: 'WebClientConfig' });
export type WebClientConfig = z.infer<typeof WebClientConfigSchema>;

const searchText = z.string().max(200).nullable().optional();

export const ModelsSearchInputSchema = z
  .object({ ...paging(50), query: searchText, verified__eq: queryBool().nullable().optional(), provider__eq: searchText })
  .prefault({});
export type ModelsSearchInput = z.output<typeof ModelsSearchInputSchema>;
export const LlmModelSchema = z
  .object({
    provider: z.string().nullable(),
    name: z.string(),
    verified: z.boolean(),
    hidden: z.boolean(),
    canonical: z.string().nullable(),
  })
  .meta({ id: 'LlmModel' });
export const LlmModelPageSchema = z
  .object({ items: z.array(LlmModelSchema), next_page_id: z.string().nullable() })
  .meta({ id: 'LlmModelPage' });

export const ProvidersSearchInputSchema = z
  .object({ ...paging(50), query: searchText, verified__eq: queryBool().nullable().optional() })
  .prefault({});
export type ProvidersSearchInput = z.output<typeof ProvidersSearchInputSchema>;
export const LlmProviderPageSchema = z
  .object({ items: z.array(z.object({ name: z.string(), verified: z.boolean() })), next_page_id: z.string().nullable() })
  .meta({ id: 'LlmProviderPage' });

export const SkillsSearchInputSchema = z.object(paging(100)).prefault({});
export const SkillPageSchema = z
  .object({
    items: z.array(z.object({ name: z.string(), type: z.string(), source: z.string(), triggers: z.array(z.string()).nullable() })),
    next_page_id: z.string().nullable(),
  })
  .meta({ id: 'SkillPage' });

export const UserMeInputSchema = z.object({ expose_secrets: queryBool().optional() }).prefault({});

/**
 * GET /api/v1/users/me: every V0 settings field and the nested 2026 ones, the user's id, and
 * the LLM profiles (a dict of LLM keyword arguments per name, as the SDK workspace reads it).
 * Secrets are null (MCP credentials masked) unless exposed to the user's running sandbox.
 */
export const UserInfoSchema = SettingsSchema.extend({
  id: z.string(),
  llm_api_key: z.string().nullable(),
  search_api_key: z.string().nullable(),
  sandbox_api_key: z.string().nullable(),
  mcp_config: McpConfigSchema.nullable(),
  ...nestedSettingsShape,
  // Only to the automation service (a request with an automation key): its UUID aliases, the
  // role and permissions it checks (src/automations/automation-access.ts).
  org_id: z.string().optional(),
  role: z.string().optional(),
  permissions: z.array(z.string()).optional(),
}).meta({ id: 'UserInfo' });
export type UserInfo = z.infer<typeof UserInfoSchema>;
