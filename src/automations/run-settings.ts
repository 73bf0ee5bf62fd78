// What an automation run's code gets of its user's settings. The automation service runs the
// SDK in the run's sandbox, which asks users/me for the LLM (the cloud workspace's get_llm:
// ?expose_secrets=true) and the MCP servers, with the run's automation key and its sandbox's
// session key. The key never goes there: it gets the LLM gateway's URL and a token for that
// sandbox's route (llm-routes.ts, `sandboxRouteId`), which the gateway counts against the
// conversation the run's agent server reports there, under the user's budgets; remote MCP
// servers with credentials are reached through the gateway as in any conversation.
import { AppError } from '../errors.js';
import type { AgentLlms } from '../llm-gateway/agent-llm.js';
import { sandboxRouteId } from '../llm-gateway/llm-routes.js';
import type { SandboxKeys } from '../sandbox/index.js';
import { type SettingsService, v0View } from '../services/settings/settings.service.js';

export class AutomationRunSettings {
  constructor(
    private readonly sandboxKeys: Pick<SandboxKeys, 'running'>,
    private readonly settings: Pick<SettingsService, 'resolve'>,
    private readonly agentLlms: AgentLlms,
  ) {}

  /**
   * users/me's LLM and MCP fields for code in a running automation run's sandbox of the user's
   * (the session key's); null for any other session key (another's, a sandbox of theirs not
   * started for a run), or none.
   */
  async forSandbox(userId: string, sessionKey: string | undefined) {
    const sandbox = await this.sandboxKeys.running(sessionKey);
    if (!sandbox || sandbox.userId !== userId || sandbox.purpose !== 'automation') return null;
    const settings = await this.settings.resolve(userId);
    if (!settings?.llm_model) {
      throw new AppError('BAD_REQUEST', 'No LLM model configured: set llm_model in your settings');
    }
    const { llm, mcp } = await this.agentLlms.forStart(
      sandboxRouteId(sandbox._id),
      { userId, sandboxId: sandbox._id },
      { model: settings.llm_model, baseUrl: settings.llm_base_url ?? null, apiKey: settings.llm_api_key },
      settings.mcp_config,
    );
    return { llm_model: llm.model, llm_base_url: llm.base_url ?? null, llm_api_key: llm.api_key ?? null, mcp_config: v0View(mcp) };
  }
}
