// The two seams through which conversations use profiles the settings side keeps:
// - agent profiles (GET /api/agent-profiles; a start's agent_profile_id): presets of the
//   agent/LLM settings a user launches a conversation from;
// - LLM profiles (/api/v1/settings/profiles; POST …/{id}/switch_profile): named LLM
//   configurations a running conversation switches to.
// The conversation side needs only what is below. Until the settings side wires its stores
// in (src/domain.ts), the defaults know no profiles: a start naming one is refused with 422,
// a switch to one answers 404, and a start without one runs on the user's settings.
import type { ResolvedSettings } from '../services/settings.service.js';

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
export const NO_LLM_PROFILES: LlmProfiles = { llm: async () => null };

/** A start's settings: the user's, with the profile's over them. */
export function withProfile<T extends ResolvedSettings>(settings: T, profile: AgentProfile | null): T {
  if (!profile) return settings;
  const set = Object.fromEntries(Object.entries(profile.settings).filter(([, value]) => value !== undefined));
  return { ...settings, ...set };
}

/** Tags that record the profile a conversation was launched from (the reference's tag names). */
export const PROFILE_TAGS = { id: 'agentprofileid', revision: 'agentprofilerevision' } as const;
