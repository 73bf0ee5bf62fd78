// Agent profiles (/api/agent-profiles): presets of the agent a user picks at a conversation
// start, per user, beside the LLM profiles they name (docs/api.md "2026 /api/v1 surface"):
// - a profile names an LLM profile (llm_profile_ref) and carries no credential; a rename of
//   that LLM profile follows, and the LLM profile cannot be deleted while named;
// - activation only moves the pointer (active_agent_profile_id), as the agent SDK's does;
// - ids are stable across renames, revisions count saves.
import crypto from 'node:crypto';
import type { AgentProfile, SaveAgentProfileInput } from '../../../contract/agent-profiles.schema.js';
import type { LlmConfig } from '../../../contract/settings-v1.schema.js';
import type { SecretBox } from '../../crypto.js';
import { AppError } from '../../errors.js';
import { configOf } from './llm-profiles.service.js';
import { llmProfileSecretContext, type ProfilesStore } from './profiles-store.js';

/** The agent SDK's cap on agent profiles. */
export const MAX_AGENT_PROFILES = 50;
const SCHEMA_VERSION = 1;

const notFound = (what: string) => new AppError('NOT_FOUND', `Agent profile ${what} not found`, { reason: 'agent_profile_not_found' });

export class AgentProfilesService {
  constructor(
    private readonly store: ProfilesStore,
    private readonly box: SecretBox,
  ) {}

  async list(userId: string) {
    const { agent, activeAgentId } = await this.store.read(userId);
    return {
      profiles: agent.map((p) => ({
        id: p.id,
        name: p.name,
        agent_kind: p.agent_kind,
        revision: p.revision,
        llm_profile_ref: p.llm_profile_ref,
        mcp_server_refs: p.mcp_server_refs,
      })),
      active_agent_profile_id: activeAgentId,
    };
  }

  async get(userId: string, name: string) {
    const profile = (await this.store.read(userId)).agent.find((p) => p.name === name);
    if (!profile) throw notFound(`'${name}'`);
    return { name, profile };
  }

  /** Creates or overwrites by name: an overwrite keeps the id and bumps the revision. */
  async save(userId: string, input: SaveAgentProfileInput) {
    return this.store.change(userId, ({ agent }) => {
      const existing = agent.find((p) => p.name === input.name);
      if (!existing && agent.length >= MAX_AGENT_PROFILES) {
        throw new AppError('CONFLICT', `Agent profile limit reached (${MAX_AGENT_PROFILES}). Delete a profile before saving a new one.`, {
          reason: 'agent_profile_limit',
        });
      }
      const saved: AgentProfile = {
        schema_version: SCHEMA_VERSION,
        id: existing?.id ?? crypto.randomUUID(),
        name: input.name,
        revision: (existing?.revision ?? 0) + 1,
        agent_kind: 'openhands',
        llm_profile_ref: input.llm_profile_ref ?? null,
        mcp_server_refs: input.mcp_server_refs ?? null,
        agent: input.agent ?? 'CodeActAgent',
        skills: input.skills ?? [],
        system_message_suffix: input.system_message_suffix ?? null,
        condenser: input.condenser ?? null,
        verification: input.verification ?? null,
        enable_sub_agents: input.enable_sub_agents ?? false,
        tool_concurrency_limit: input.tool_concurrency_limit ?? 1,
      };
      const next = existing ? agent.map((p) => (p.name === input.name ? saved : p)) : [...agent, saved];
      return { profiles: { agent: next }, result: { name: input.name, message: `Agent profile '${input.name}' saved` } };
    });
  }

  /** Idempotent; deleting the active profile leaves none active. */
  async delete(userId: string, name: string) {
    return this.store.change(userId, ({ agent, activeAgentId }) => {
      const deleted = agent.find((p) => p.name === name);
      const active = deleted && deleted.id === activeAgentId ? null : activeAgentId;
      return {
        profiles: { agent: agent.filter((p) => p.name !== name), activeAgentId: active },
        result: { name, message: `Agent profile '${name}' deleted` },
      };
    });
  }

  async rename(userId: string, name: string, newName: string) {
    return this.store.change(userId, ({ agent }) => {
      if (!agent.some((p) => p.name === name)) throw notFound(`'${name}'`);
      const result = { name: newName, message: `Agent profile '${name}' renamed to '${newName}'` };
      if (name === newName) return { result };
      if (agent.some((p) => p.name === newName)) {
        throw new AppError('CONFLICT', `Agent profile '${newName}' already exists`, { reason: 'agent_profile_exists' });
      }
      return { profiles: { agent: agent.map((p) => (p.name === name ? { ...p, name: newName } : p)) }, result };
    });
  }

  /** Pointer only: the settings are not touched (agent_settings_applied is always false). */
  async activate(userId: string, profileId: string) {
    return this.store.change(userId, ({ agent }) => {
      if (!agent.some((p) => p.id === profileId)) throw notFound(`with id '${profileId}'`);
      return {
        profiles: { activeAgentId: profileId },
        result: { id: profileId, message: `Agent profile '${profileId}' activated`, agent_settings_applied: false },
      };
    });
  }

  /**
   * What a conversation start with agent_profile_id needs: the profile and its LLM profile's
   * configuration with the key opened (null when it names none, or one since deleted: the start
   * then uses the settings' LLM). For the start workflow, never for a response.
   */
  async forStart(userId: string, profileId: string): Promise<{ profile: AgentProfile; llm: LlmConfig | null }> {
    const { agent, llm } = await this.store.read(userId);
    const profile = agent.find((p) => p.id === profileId);
    if (!profile) throw notFound(`with id '${profileId}'`);
    const named = llm.find((p) => p.name === profile.llm_profile_ref);
    const key = named?.apiKey ? this.box.decrypt(named.apiKey, llmProfileSecretContext(userId)) : null;
    return { profile, llm: named ? configOf(named, key) : null };
  }
}
