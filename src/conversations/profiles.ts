// The two seams through which conversations use profiles the settings side keeps:
// - agent profiles (GET /api/agent-profiles; a start's agent_profile_id): presets of the
//   agent/LLM settings a user launches a conversation from;
// - LLM profiles (/api/v1/settings/profiles; POST …/{id}/switch_profile): named LLM
//   configurations a running conversation switches to.
// The conversation side needs only what is below; src/domain.ts wires the settings side's
// stores in (profilesFromSettings). A start naming a profile the user does not have is refused
// with 422, a switch to an unknown LLM profile answers 404, and a start without a profile runs
// on the user's active agent profile, else on the user's settings.
import type { ResolvedSettings } from '../services/settings/settings.service.js';

/** What an agent profile may set over the user's settings for one start (absent keys keep the user's). */
export type ProfileSettings = Partial<
  Pick<ResolvedSettings, 'llm_model' | 'llm_api_key' | 'llm_base_url' | 'confirmation_mode' | 'max_iterations' | 'mcp_config'>
>;

export interface AgentProfile {
  /** The id a start names (agent_profile_id); recorded with the conversation. */
  id: string;
  /** Changes with every edit of the profile; recorded with the conversation (launched_agent_profile). */
  revision: number;
  settings: ProfileSettings;
}

export interface AgentProfiles {
  /**
   * The user's profile with this id, or null when the user has none by that id. With a null id:
   * the profile the user made active (a start that names none launches from it), or null.
   */
  resolve(userId: string, profileId: string | null): Promise<AgentProfile | null>;
}

/** An LLM the agent server can switch a conversation to (the SDK's LLM fields; the key in clear). */
export interface LlmProfile {
  model: string;
  base_url?: string | null;
  api_key?: string | null;
}

export interface LlmProfiles {
  /** The user's LLM profile of this name, or null. */
  llm(userId: string, name: string): Promise<LlmProfile | null>;
}

export const NO_AGENT_PROFILES: AgentProfiles = { resolve: async () => null };

/** A start's settings: the user's, with the profile's over them. */
export function withProfile<T extends ResolvedSettings>(settings: T, profile: AgentProfile | null): T {
  if (!profile) return settings;
  const set = Object.fromEntries(Object.entries(profile.settings).filter(([, value]) => value !== undefined));
  return { ...settings, ...set };
}

/** Tags that record the profile a conversation was launched from (the reference's tag names). */
export const PROFILE_TAGS = { id: 'agentprofileid', revision: 'agentprofilerevision' } as const;
/** The tags a conversation launched from a profile carries. */
export const profileTags = (profile: { id: string; revision: number } | null): Record<string, string> =>
  profile ? { [PROFILE_TAGS.id]: profile.id, [PROFILE_TAGS.revision]: String(profile.revision) } : {};

/** What the settings side's profile services give the seams above (src/services/settings/agent-profiles.service.ts, llm-profiles.service.ts). */
interface SettingsSideProfiles {
  agent: {
    list(userId: string): Promise<{ active_agent_profile_id: string | null }>;
    forStart(
      userId: string,
      profileId: string,
    ): Promise<{
      profile: { id: string; revision: number };
      llm: { model: string | null; api_key: string | null; base_url: string | null } | null;
    }>;
  };
  llm: {
    asKwargs(
      userId: string,
      expose: boolean,
    ): Promise<{ profiles: Record<string, { model: string | null; api_key: string | null; base_url: string | null }> }>;
  };
}

/**
 * The seams over the settings side's stores. An agent profile sets the LLM of the start (model,
 * key, base URL of the LLM profile it names); its other fields (MCP server references, skills,
 * the system message suffix) are not applied yet (docs/conversations.md).
 */
export function profilesFromSettings(side: SettingsSideProfiles): { agent: AgentProfiles; llm: LlmProfiles } {
  return {
    agent: {
      async resolve(userId, profileId) {
        const id = profileId ?? (await side.agent.list(userId)).active_agent_profile_id;
        if (!id) return null;
        const found = await side.agent.forStart(userId, id).catch((error: unknown) => {
          if ((error as { reason?: string }).reason === 'agent_profile_not_found') return null;
          throw error;
        });
        if (!found) return null;
        const llm = found.llm?.model
          ? { llm_model: found.llm.model, llm_api_key: found.llm.api_key, llm_base_url: found.llm.base_url }
          : {};
        return { id: found.profile.id, revision: found.profile.revision, settings: llm };
      },
    },
    llm: {
      async llm(userId, name) {
        const profile = (await side.llm.asKwargs(userId, true)).profiles[name];
        return profile?.model ? { model: profile.model, base_url: profile.base_url, api_key: profile.api_key } : null;
      },
    },
  };
}
