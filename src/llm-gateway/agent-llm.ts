// What an agent's LLM config holds (docs/llm-gateway.md, The key's way): with the gateway on,
// the model, the gateway's base URL as the sandbox reaches the service, and the conversation's
// gateway token; the owner's key and base URL stay in the service (llm-routes.ts). With it off
// (LLM_GATEWAY=off, the operator's choice for everyone), the owner's own, as before; likewise for
// a model the gateway cannot front when its owner chose that path (llm_key_in_sandbox).
import type { McpConfig } from '../../contract/mcp.schema.js';
import { AppError } from '../errors.js';
import type { LlmRoutes, LlmUpstream, McpUpstream } from './llm-routes.js';
import type { ModelPolicy } from './model-policy.js';
import { frontedModel } from './upstream.js';

export interface AgentLlm {
  model: string;
  base_url?: string;
  api_key?: string;
}

/** The base URL litellm is given so that the paths it appends land on the gateway's routes. */
export function gatewayBaseUrl(origin: string, model: string): string {
  const anthropic = /^anthropic\//.test(model) || /^claude-/.test(model);
  // litellm appends /v1/messages for Anthropic, /chat/completions or /responses for the rest.
  return `${origin.replace(/\/+$/, '')}/llm${anthropic ? '' : '/v1'}`;
}

export interface AgentLlmsOptions {
  /** LLM_GATEWAY=on. */
  enabled: boolean;
  /** The models the owner may run, whichever way the key goes. */
  modelPolicy: ModelPolicy;
  /** The service's origin as the conversation's sandbox reaches it. */
  origin: () => string;
  /**
   * Whether the user chose to have their key in the sandbox for a model the gateway cannot front
   * (settings llm_key_in_sandbox); null when the operator allows no such choice (LLM_KEY_IN_SANDBOX=never).
   */
  keyInSandboxChosen: ((userId: string) => Promise<boolean>) | null;
}

export class AgentLlms {
  constructor(
    private readonly routes: LlmRoutes,
    private readonly options: AgentLlmsOptions,
  ) {}

  /** The agent's LLM for a conversation (a start, or a switch to another profile: its MCP servers stay as they were). */
  async forConversation(conversationId: string, owner: { userId: string; sandboxId: string }, upstream: LlmUpstream): Promise<AgentLlm> {
    return (await this.forStart(conversationId, owner, upstream, null)).llm;
  }

  /**
   * The agent's LLM and MCP servers at a start: a remote MCP server with a key is reached through
   * the gateway (/llm/mcp/<name>, the conversation's token as its key); one without a key, and
   * every stdio server (it runs inside the sandbox, its environment with it), as configured.
   */
  async forStart(
    conversationId: string,
    owner: { userId: string; sandboxId: string },
    upstream: LlmUpstream,
    mcp: McpConfig | null,
  ): Promise<{ llm: AgentLlm; mcp: McpConfig | null }> {
    await this.options.modelPolicy.assertAllowed(owner.userId, upstream.model);
    if (!this.options.enabled) return { llm: direct(upstream), mcp };
    if (!frontedModel(upstream.model)) {
      const chosen = this.options.keyInSandboxChosen;
      if (!chosen || !(await chosen(owner.userId))) {
        throw new AppError(
          'BAD_REQUEST',
          `${upstream.model}: the LLM gateway fronts OpenAI-compatible and Anthropic models only, and this service keeps LLM keys out of sandboxes` +
            (chosen ? ' unless their owner chooses otherwise (settings llm_key_in_sandbox)' : ''),
          { reason: 'llm_provider_not_fronted' },
        );
      }
      // The owner's choice: the conversation runs as with the gateway off, its keys in the sandbox
      // (the remote MCP servers' too) and its cost from the agent's reports, so no route stays open.
      await this.routes.close({ conversationId });
      return { llm: direct(upstream), mcp };
    }
    const servers: McpUpstream[] = [];
    if (mcp) {
      mcp.sse_servers.forEach((s, i) => s.api_key && servers.push({ name: `sse_${i}`, url: s.url, apiKey: s.api_key }));
      mcp.shttp_servers.forEach((s, i) => s.api_key && servers.push({ name: `shttp_${i}`, url: s.url, apiKey: s.api_key }));
    }
    const token = await this.routes.open(conversationId, owner, mcp ? { ...upstream, mcp: servers } : upstream);
    const origin = this.options.origin().replace(/\/+$/, '');
    return {
      llm: { model: upstream.model, base_url: gatewayBaseUrl(origin, upstream.model), api_key: token },
      mcp: mcp && this.throughGateway(mcp, token),
    };
  }

  /** The MCP config with each remote server that has a key pointed at the gateway, the token as its key. */
  private throughGateway(mcp: McpConfig, token: string): McpConfig {
    const origin = this.options.origin().replace(/\/+$/, '');
    const through = (name: string) => ({ url: `${origin}/llm/mcp/${name}`, api_key: token });
    return {
      ...mcp,
      sse_servers: mcp.sse_servers.map((s, i) => (s.api_key ? { ...s, ...through(`sse_${i}`) } : s)),
      shttp_servers: mcp.shttp_servers.map((s, i) => (s.api_key ? { ...s, ...through(`shttp_${i}`) } : s)),
    };
  }
}

/** The owner's own LLM config, handed to the agent as it is (the key in the sandbox). */
function direct(upstream: LlmUpstream): AgentLlm {
  return {
    model: upstream.model,
    ...(upstream.baseUrl ? { base_url: upstream.baseUrl } : {}),
    ...(upstream.apiKey ? { api_key: upstream.apiKey } : {}),
  };
}
