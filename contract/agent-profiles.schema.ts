// Agent profiles (/api/agent-profiles, docs/api.md "2026 /api/v1 surface"): named presets of
// the agent a user picks at a conversation start. A profile names an LLM profile
// (llm_profile_ref) instead of carrying credentials, as the agent SDK's profiles do.
import { z } from 'zod';
import { jsonBool, jsonInt, noCoerce, storedJson } from './common.schema.js';
import { ProfileNameSchema } from './settings-v1.schema.js';

const json = () => storedJson(z.unknown());

export const AgentProfileSchema = z
  .object({
    schema_version: z.number(),
    id: z.string(),
    name: z.string(),
    revision: z.number(),
    agent_kind: z.literal('openhands'),
    llm_profile_ref: z.string().nullable(),
    mcp_server_refs: z.array(z.string()).nullable(),
    agent: z.string(),
    skills: z.array(z.unknown()),
    system_message_suffix: z.string().nullable(),
    condenser: z.unknown(),
    verification: z.unknown(),
    enable_sub_agents: z.boolean(),
    tool_concurrency_limit: z.number(),
  })
  .meta({ id: 'AgentProfile' });
export type AgentProfile = z.infer<typeof AgentProfileSchema>;

/**
 * POST /api/agent-profiles/{name}: create or overwrite. Server-managed identity (id,
 * revision, schema_version) may be echoed back and is ignored; ACP profiles are refused
 * (only the OpenHands agent runs here).
 */
export const SaveAgentProfileInputSchema = z.strictObject({
  name: ProfileNameSchema,
  agent_kind: z.literal('openhands').optional(),
  id: z.string().max(128).nullable().optional(),
  revision: noCoerce(z.number()).nullable().optional(),
  schema_version: noCoerce(z.number()).nullable().optional(),
  llm_profile_ref: ProfileNameSchema.nullable().optional(),
  mcp_server_refs: z.array(z.string().max(200)).max(100).nullable().optional(),
  agent: z.string().min(1).max(200).optional(),
  skills: z.array(json()).max(200).optional(),
  system_message_suffix: z.string().max(20_000).nullable().optional(),
  condenser: json().optional(),
  verification: json().optional(),
  enable_sub_agents: jsonBool().optional(),
  tool_concurrency_limit: jsonInt().pipe(z.number().min(1).max(64)).optional(),
});
export type SaveAgentProfileInput = z.output<typeof SaveAgentProfileInputSchema>;

export const AgentProfileNameInputSchema = z.object({ name: ProfileNameSchema });
export const AgentProfileIdInputSchema = z.object({ profile_id: z.string().min(1).max(128) });
export const RenameAgentProfileInputSchema = z.object({ name: ProfileNameSchema, new_name: ProfileNameSchema });

export const AgentProfileListSchema = z
  .object({
    profiles: z.array(
      z.object({
        id: z.string(),
        name: z.string(),
        agent_kind: z.literal('openhands'),
        revision: z.number(),
        llm_profile_ref: z.string().nullable(),
        mcp_server_refs: z.array(z.string()).nullable(),
      }),
    ),
    active_agent_profile_id: z.string().nullable(),
  })
  .meta({ id: 'AgentProfileList' });

export const AgentProfileDetailSchema = z.object({ name: z.string(), profile: AgentProfileSchema }).meta({ id: 'AgentProfileDetail' });

export const ActivateAgentProfileSchema = z
  .object({ id: z.string(), message: z.string(), agent_settings_applied: z.boolean() })
  .meta({ id: 'ActivateAgentProfile' });
