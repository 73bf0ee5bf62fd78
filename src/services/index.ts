import type { Config } from '../config.js';
import type { SecretBox } from '../crypto.js';
import type { Database } from '../db.js';
import type { SandboxRuntime } from '../sandbox/runtime.js';
import { ApiKeysService } from './api-keys.service.js';
import { SandboxSpecsService } from './sandbox-specs.service.js';
import { SandboxesService } from './sandboxes.service.js';
import { GitProvidersService } from './git-providers.service.js';
import { SecretsService } from './secrets.service.js';
import { SettingsService } from './settings.service.js';

export function createServices(db: Database, box: SecretBox, config: Config, runtime: SandboxRuntime, webUrl: () => string) {
  const gitProviders = new GitProvidersService(db.models, box, config.providers);
  const sandboxSpecs = new SandboxSpecsService(config.sandbox);
  return {
    sandboxSpecs,
    sandboxes: new SandboxesService(db.models, box, sandboxSpecs, runtime, config.sandbox, webUrl),
    apiKeys: new ApiKeysService(db.models.ApiKey, config.auth.sessionApiKey),
    settings: new SettingsService(db.models, box, gitProviders),
    gitProviders,
    secrets: new SecretsService(db.models, box),
  };
}

export type Services = ReturnType<typeof createServices>;
