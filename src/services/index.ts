import { AccessTokens } from '../access-token.js';
import type { Config } from '../config.js';
import type { SecretBox } from '../crypto.js';
import type { Database } from '../db/database.js';
import type { Logger } from '../logger.js';
import type { SandboxRuntime } from '../sandbox/runtime.js';
import { ApiKeysService } from './api-keys.service.js';
import { AppConversationsService } from './app-conversations.service.js';
import { ConversationsService } from './conversations.service.js';
import { GitProvidersService } from './git-providers.service.js';
import { SandboxSpecsService } from './sandbox-specs.service.js';
import { SandboxesService } from './sandboxes.service.js';
import { SecretsService } from './secrets.service.js';
import { SettingsService } from './settings.service.js';
import { StartTaskRunner } from './start-task-runner.js';
import { WebhooksService } from './webhooks.service.js';

export interface ServiceOptions {
  db: Database;
  box: SecretBox;
  config: Config;
  runtime: SandboxRuntime;
  /** This service's base URL as sandboxes reach it (webhooks, secret lookups). */
  webUrl: () => string;
  log: Logger;
}

export function createServices({ db, box, config, runtime, webUrl, log }: ServiceOptions) {
  const models = db.models;
  const gitProviders = new GitProvidersService(models, box, config.providers);
  const settings = new SettingsService(models, box, gitProviders);
  const secrets = new SecretsService(models, box);
  const sandboxSpecs = new SandboxSpecsService(config.sandbox);
  const sandboxes = new SandboxesService(models, box, sandboxSpecs, runtime, config.sandbox, webUrl);
  const accessTokens = new AccessTokens(box.deriveKey('git-token-lookup'), config.conversations.gitTokenTtlSeconds);
  const startTasks = new StartTaskRunner({
    models,
    box,
    settings,
    gitProviders,
    secrets,
    sandboxes,
    accessTokens,
    config,
    webUrl,
    log: log.child({ component: 'start-tasks' }),
  });
  const appConversations = new AppConversationsService(models, box, sandboxes, startTasks, log);
  return {
    apiKeys: new ApiKeysService(models.ApiKey, config.auth.sessionApiKey),
    settings,
    gitProviders,
    secrets,
    sandboxSpecs,
    sandboxes,
    startTasks,
    appConversations,
    conversations: new ConversationsService(appConversations, settings, gitProviders),
    webhooks: new WebhooksService(models, sandboxes, gitProviders, accessTokens),
  };
}

export type Services = ReturnType<typeof createServices>;
