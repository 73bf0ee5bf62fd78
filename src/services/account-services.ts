// The services of the 2026 settings and account routes, wired together (src/domain.ts spreads
// them into the services): the nested settings, LLM and agent profiles over one profiles
// store, and the account routes.
import type { Models } from '../../models/index.js';
import type { Config } from '../config.js';
import type { SecretBox } from '../crypto.js';
import { AccountService } from './account.service.js';
import { AgentProfilesService } from './agent-profiles.service.js';
import type { ApiKeysService } from './api-keys.service.js';
import { LlmProfilesService } from './llm-profiles.service.js';
import type { OptionsService } from './options.service.js';
import { ProfilesStore } from './profiles-store.js';
import type { SandboxKeys } from '../sandbox/service/sandbox-keys.js';
import { SettingsV1Service } from './settings-v1.js';
import type { SettingsService } from './settings.service.js';

export interface AccountParts {
  models: Models;
  box: SecretBox;
  config: Config;
  settings: SettingsService;
  apiKeys: ApiKeysService;
  sandboxKeys: SandboxKeys;
  options: OptionsService;
}

export function createAccountServices({ models, box, config, settings, apiKeys, sandboxKeys, options }: AccountParts) {
  const profiles = new ProfilesStore(models);
  const llmProfiles = new LlmProfilesService(profiles, settings, box);
  return {
    settingsV1: new SettingsV1Service(settings, llmProfiles),
    llmProfiles,
    agentProfiles: new AgentProfilesService(profiles, box),
    account: new AccountService(apiKeys, settings, llmProfiles, sandboxKeys, options, config.webUi),
  };
}
