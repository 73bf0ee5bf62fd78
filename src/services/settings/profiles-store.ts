// The user's LLM profiles and agent profiles, kept in their settings document (one per user),
// read and changed together: a rename of an LLM profile renames the references of the agent
// profiles in the same write, and activating an LLM profile writes the settings' LLM in it
// too. Every change applies only over the version it read (src/db/versions.ts).
import type { Models } from '../../../models/index.js';
import type { AgentProfile } from '../../../contract/agent-profiles.schema.js';
import { newVersion, untilApplied } from '../../db/versions.js';
import { isDuplicateKeyError } from '../../errors.js';

export interface StoredLlmProfile {
  name: string;
  /** LLM keyword arguments (model, base_url, temperature…), never the key. */
  config: Record<string, unknown>;
  /** The key as ciphertext (llmProfileSecretContext), or null. */
  apiKey: string | null;
}

export interface Profiles {
  llm: StoredLlmProfile[];
  activeLlm: string | null;
  agent: AgentProfile[];
  activeAgentId: string | null;
}

/** A change: the new profiles, other fields to write in the same update, and what to return. */
export interface ProfilesChange<T> {
  profiles?: Partial<Profiles>;
  set?: Record<string, unknown>;
  unset?: string[];
  result: T;
}

/** The AES-GCM associated data of profile keys: bound to the user, not to a profile's name (renames keep it). */
export const llmProfileSecretContext = (userId: string) => `settings:${userId}:llm_profiles`;

const PROJECTION = { llmProfiles: 1, activeLlmProfile: 1, agentProfiles: 1, activeAgentProfileId: 1, profilesVersion: 1 } as const;

export class ProfilesStore {
  constructor(private readonly models: Models) {}

  async read(userId: string): Promise<Profiles> {
    return (await this.readVersioned(userId)).profiles;
  }

  /** Runs `change` over what is stored until its write applies; errors it throws end the call. */
  async change<T>(userId: string, change: (profiles: Profiles) => ProfilesChange<T>): Promise<T> {
    let result: T | undefined;
    await untilApplied('The profiles', async () => {
      const { profiles, version } = await this.readVersioned(userId);
      const outcome = change(profiles);
      result = outcome.result;
      const next = { ...profiles, ...outcome.profiles };
      const set: Record<string, unknown> = {
        ...outcome.set,
        llmProfiles: next.llm,
        agentProfiles: next.agent,
        profilesVersion: newVersion(),
      };
      const unset: Record<string, ''> = Object.fromEntries((outcome.unset ?? []).map((path) => [path, '' as const]));
      if (next.activeLlm) set.activeLlmProfile = next.activeLlm;
      else unset.activeLlmProfile = '';
      if (next.activeAgentId) set.activeAgentProfileId = next.activeAgentId;
      else unset.activeAgentProfileId = '';
      try {
        // No document yet, or one created meanwhile: the upsert's insert collides and this reads again.
        const update = { $set: set, ...(Object.keys(unset).length ? { $unset: unset } : {}) };
        const written = await this.models.Settings.updateOne({ userId, profilesVersion: version }, update, { upsert: true });
        return written.matchedCount + written.upsertedCount > 0;
      } catch (error) {
        if (isDuplicateKeyError(error)) return false;
        throw error;
      }
    });
    return result as T;
  }

  private async readVersioned(userId: string): Promise<{ profiles: Profiles; version: string | null }> {
    const doc = await this.models.Settings.findOne({ userId }, PROJECTION).lean();
    return {
      version: doc?.profilesVersion ?? null,
      profiles: {
        llm: (doc?.llmProfiles ?? []).map((p) => ({
          name: p.name,
          config: (p.config ?? {}) as Record<string, unknown>,
          apiKey: p.apiKey ?? null,
        })),
        activeLlm: doc?.activeLlmProfile ?? null,
        agent: (doc?.agentProfiles ?? []) as AgentProfile[],
        activeAgentId: doc?.activeAgentProfileId ?? null,
      },
    };
  }
}
