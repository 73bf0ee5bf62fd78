// LLM profiles (/api/v1/settings/profiles): named LLM configurations a user switches between,
// with the reference's rules (docs/api.md "2026 /api/v1 surface"). Keys are encrypted and
// never returned; activating a profile makes it the settings' LLM (model, key, base URL and
// the other keyword arguments) in one write.
import { FORM_ONLY_LLM_KEYS, type LlmConfig, type SaveProfileInput } from '../../../contract/settings-v1.schema.js';
import { LLM_EXTRA_KEYS } from '../../../contract/settings-fields.js';
import type { SecretBox } from '../../crypto.js';
import { AppError } from '../../errors.js';
import { llmProfileSecretContext, type Profiles, type ProfilesStore, type StoredLlmProfile } from './profiles-store.js';
import { settingsSecretContext } from './settings-secrets.js';
import type { SettingsService } from './settings.service.js';

/** The reference's cap on LLM profiles per user. */
export const MAX_LLM_PROFILES = 10;

const notFound = (name: string) => new AppError('NOT_FOUND', `Profile '${name}' not found`, { reason: 'llm_profile_not_found' });

export class LlmProfilesService {
  constructor(
    private readonly store: ProfilesStore,
    private readonly settings: SettingsService,
    private readonly box: SecretBox,
  ) {}

  async list(userId: string) {
    const { llm, activeLlm } = await this.store.read(userId);
    return {
      profiles: llm.map((p) => ({
        name: p.name,
        model: str(p.config.model),
        base_url: str(p.config.base_url),
        api_key_set: p.apiKey !== null,
      })),
      active_profile: activeLlm,
    };
  }

  async get(userId: string, name: string) {
    const profile = (await this.store.read(userId)).llm.find((p) => p.name === name);
    if (!profile) throw notFound(name);
    const config = configOf(profile, null);
    return { name, config, llm: config, api_key_set: profile.apiKey !== null };
  }

  /**
   * Creates or overwrites. Without `llm` the settings' current LLM is saved. A key left out (or
   * null) keeps an existing profile's key, as does preserve_existing_api_key; include_secrets
   * false stores none.
   */
  async save(userId: string, input: SaveProfileInput) {
    const current = input.llm ? null : await this.currentLlm(userId);
    return this.store.change(userId, (profiles) => {
      const existing = profiles.llm.find((p) => p.name === input.name);
      if (!existing && profiles.llm.length >= MAX_LLM_PROFILES) {
        throw new AppError('CONFLICT', `Profile limit reached (${MAX_LLM_PROFILES}). Delete a profile before saving a new one.`, {
          reason: 'llm_profile_limit',
        });
      }
      const { api_key: sent, ...config } = (input.llm ?? current!) as Record<string, unknown>;
      for (const key of FORM_ONLY_LLM_KEYS) delete config[key]; // their defaults only (the schema): nothing to keep
      const api_key = typeof sent === 'string' ? sent : null;
      let apiKey = api_key?.trim() ? this.box.encrypt(api_key, llmProfileSecretContext(userId)) : null;
      if ((api_key == null || input.preserve_existing_api_key) && existing) apiKey = existing.apiKey;
      if (input.include_secrets === false) apiKey = null;
      const saved: StoredLlmProfile = { name: input.name, config: withoutNulls(config), apiKey };
      const llm = existing ? profiles.llm.map((p) => (p.name === input.name ? saved : p)) : [...profiles.llm, saved];
      // Overwriting the active profile leaves the settings' LLM behind: it is no longer active.
      const activeLlm = profiles.activeLlm === input.name ? null : profiles.activeLlm;
      return { profiles: { llm, activeLlm }, result: { name: input.name, message: `Profile '${input.name}' saved` } };
    });
  }

  /** Idempotent. Refused while an agent profile names it (as the agent SDK's profiles are). */
  async delete(userId: string, name: string) {
    return this.store.change(userId, (profiles) => {
      const users = profiles.agent.filter((a) => a.llm_profile_ref === name).map((a) => a.name);
      if (users.length) {
        throw new AppError('CONFLICT', `Profile '${name}' is used by agent profile(s): ${users.join(', ')}`, {
          reason: 'llm_profile_referenced',
        });
      }
      const activeLlm = profiles.activeLlm === name ? null : profiles.activeLlm;
      return {
        profiles: { llm: profiles.llm.filter((p) => p.name !== name), activeLlm },
        result: { name, message: `Profile '${name}' deleted` },
      };
    });
  }

  /** Keeps the key and the active flag; the agent profiles naming it follow in the same write. */
  async rename(userId: string, name: string, newName: string) {
    return this.store.change(userId, (profiles) => {
      if (!profiles.llm.some((p) => p.name === name)) throw notFound(name);
      const result = { name: newName, message: `Profile '${name}' renamed to '${newName}'` };
      if (name === newName) return { result };
      if (profiles.llm.some((p) => p.name === newName)) {
        throw new AppError('CONFLICT', `Profile '${newName}' already exists`, { reason: 'llm_profile_exists' });
      }
      const next: Partial<Profiles> = {
        llm: profiles.llm.map((p) => (p.name === name ? { ...p, name: newName } : p)),
        agent: profiles.agent.map((a) => (a.llm_profile_ref === name ? { ...a, llm_profile_ref: newName } : a)),
        activeLlm: profiles.activeLlm === name ? newName : profiles.activeLlm,
      };
      return { profiles: next, result };
    });
  }

  /** The profile becomes the settings' LLM (a settings save: settings exist afterwards). */
  async activate(userId: string, name: string) {
    return this.store.change(userId, (profiles) => {
      const profile = profiles.llm.find((p) => p.name === name);
      if (!profile) throw notFound(name);
      const { model, base_url, ...extra } = profile.config;
      const set: Record<string, unknown> = { llm_model: str(model), llm_base_url: str(base_url), llmExtra: extra, updatedAt: new Date() };
      const unset: string[] = [];
      if (profile.apiKey) {
        const key = this.box.decrypt(profile.apiKey, llmProfileSecretContext(userId));
        set.llm_api_key = this.box.encrypt(key, settingsSecretContext(userId, 'llm_api_key'));
      } else unset.push('llm_api_key');
      return {
        profiles: { activeLlm: name },
        set,
        unset,
        result: { name, message: `Switched to profile '${name}'`, model: str(model), llm: configOf(profile, null) },
      };
    });
  }

  /** Every profile as LLM keyword arguments; keys opened only when `expose` (the user's running sandbox). */
  async asKwargs(userId: string, expose: boolean): Promise<{ profiles: Record<string, LlmConfig>; active: string | null }> {
    const { llm, activeLlm } = await this.store.read(userId);
    const open = (p: StoredLlmProfile) => (expose && p.apiKey ? this.box.decrypt(p.apiKey, llmProfileSecretContext(userId)) : null);
    return { profiles: Object.fromEntries(llm.map((p) => [p.name, configOf(p, open(p))])), active: activeLlm };
  }

  /** The settings' LLM as a profile's configuration (key opened; it is sealed again at once). */
  private async currentLlm(userId: string) {
    const resolved = await this.settings.resolve(userId);
    if (!resolved?.llm_model) {
      throw new AppError('NOT_FOUND', 'Settings not found', { reason: 'settings_not_found' });
    }
    return { model: resolved.llm_model, base_url: resolved.llm_base_url, api_key: resolved.llm_api_key, ...resolved.llm_extra };
  }
}

/** A profile's configuration as returned: the three main keys always present, the key as given. */
export function configOf(profile: StoredLlmProfile, apiKey: string | null): LlmConfig {
  const extra = Object.fromEntries(LLM_EXTRA_KEYS.filter((k) => profile.config[k] != null).map((k) => [k, profile.config[k]]));
  return { model: str(profile.config.model), api_key: apiKey, base_url: str(profile.config.base_url), ...extra };
}

const withoutNulls = (config: Record<string, unknown>) => Object.fromEntries(Object.entries(config).filter(([, v]) => v != null));
const str = (v: unknown) => (typeof v === 'string' ? v : null);
