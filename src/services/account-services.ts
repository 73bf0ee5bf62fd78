// The services of the 2026 settings and account routes, wired together (src/domain.ts spreads
// them into the services): the nested settings, LLM and agent profiles over one profiles
// store, and the account routes.
import type { Models } from '../../models/index.js';
import type { Config } from '../config/config.js';
import type { SecretBox } from '../crypto.js';
import { AccountService } from './identity/account.service.js';
import { AutomationAccess } from '../automations/automation-access.js';
import { OrgAccess } from '../organizations/org-access.js';
import { AgentProfilesService } from './settings/agent-profiles.service.js';
import type { ApiKeysService } from './identity/api-keys.service.js';
import { LlmProfilesService } from './settings/llm-profiles.service.js';
import type { OptionsService } from './settings/options.service.js';
import { ProfilesStore } from './settings/profiles-store.js';
import type { SandboxKeys } from '../sandbox/index.js';
import { SettingsV1Service } from './settings/settings-v1.js';
import type { SettingsService } from './settings/settings.service.js';

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
    account: new AccountService(apiKeys, settings, llmProfiles, sandboxKeys, options, config.webUi, config.automations?.url ?? null),
    // The automation service's view of users and their keys (src/automations/).
    automations: new AutomationAccess(models, box, apiKeys, new OrgAccess(models), config.automations),
  };
}
