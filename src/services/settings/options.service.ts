// The web UI's options: its start-up configuration (OSS mode; values from configuration) and
// the choices its settings pages offer.
import type { WebConfig } from '../../../contract/options.schema.js';
import type { Config } from '../../config/config.js';
import { LLM_MODELS } from './llm-models.js';

// The reference's registered agents and security analyzers (stored with the settings as chosen).
const AGENTS = ['BrowsingAgent', 'CodeActAgent', 'DummyAgent', 'LocAgent', 'ReadOnlyAgent', 'VisualBrowsingAgent'];
const SECURITY_ANALYZERS = ['grayswan', 'invariant', 'llm'];

export class OptionsService {
  private readonly modelList: string[];

  constructor(private readonly web: Config['webUi']) {
    this.modelList = [...new Set([...LLM_MODELS, ...web.extraModels])].sort();
  }

  config(): WebConfig {
    return {
      APP_MODE: 'oss',
      GITHUB_CLIENT_ID: this.web.githubClientId,
      POSTHOG_CLIENT_KEY: this.web.posthogClientKey,
      FEATURE_FLAGS: {
        ENABLE_BILLING: this.web.enableBilling,
        HIDE_LLM_SETTINGS: this.web.hideLlmSettings,
        ENABLE_JIRA: false,
        ENABLE_JIRA_DC: false,
        ENABLE_LINEAR: false,
      },
      ...(this.web.maintenanceStart ? { MAINTENANCE: { startTime: this.web.maintenanceStart } } : {}),
    };
  }

  models(): string[] {
    return this.modelList;
  }

  agents(): string[] {
    return AGENTS;
  }

  securityAnalyzers(): string[] {
    return SECURITY_ANALYZERS;
  }
}
