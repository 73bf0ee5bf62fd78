// What an agent's LLM config holds (docs/llm-gateway.md, The key's way): with the gateway on,
// the model, the gateway's base URL as the sandbox reaches the service, and the conversation's
// gateway token; the owner's key and base URL stay in the service (llm-routes.ts). With it off
// (LLM_GATEWAY=off, the operator's choice for everyone), the owner's own, as before; likewise for
// a model the gateway cannot front when its owner chose that path (llm_key_in_sandbox).
import { AppError } from '../errors.js';
import { callHeaders, namedServers } from '../services/settings/mcp-servers.js';
import type { McpWith, RemoteWith } from '../services/settings/settings-secrets.js';
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
    mcp: McpWith<string | null> | null,
  ): Promise<{ llm: AgentLlm; mcp: McpWith<string | null> | null }> {
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
    for (const named of namedServers(mcp)) {
      if (named.transport === 'stdio' || !hasCredential(named.server)) continue;
      // The key goes apart: the gateway swaps it in as the bearer token of each call.
      const headers = callHeaders({ headers: named.server.headers, api_key: null });
      servers.push({ name: named.name, url: named.server.url, apiKey: named.server.api_key, headers });
    }
    const token = await this.routes.open(conversationId, owner, mcp ? { ...upstream, mcp: servers } : upstream);
    const origin = this.options.origin().replace(/\/+$/, '');
    return {
      llm: { model: upstream.model, base_url: gatewayBaseUrl(origin, upstream.model), api_key: token },
      mcp: mcp && this.throughGateway(mcp, token),
    };
  }

  /** The MCP config with each remote server that has a credential pointed at the gateway, the token as its key. */
  private throughGateway(mcp: McpWith<string | null>, token: string): McpWith<string | null> {
    const origin = this.options.origin().replace(/\/+$/, '');
    const names = new Map(namedServers(mcp).map((named) => [named.server, named.name]));
    const through = <T extends RemoteWith<string | null>>(s: T): T =>
      hasCredential(s) ? { ...s, url: `${origin}/llm/mcp/${names.get(s)!}`, api_key: token, headers: {} } : s;
    return { ...mcp, sse_servers: mcp.sse_servers.map(through), shttp_servers: mcp.shttp_servers.map(through) };
  }
}

/** A remote server whose calls carry a credential: its key or a header saved with it. */
function hasCredential(server: RemoteWith<string | null>): boolean {
  return !!server.api_key || Object.values(server.headers ?? {}).some((value) => !!value);
}

/** The owner's own LLM config, handed to the agent as it is (the key in the sandbox). */
function direct(upstream: LlmUpstream): AgentLlm {
  return {
    model: upstream.model,
    ...(upstream.baseUrl ? { base_url: upstream.baseUrl } : {}),
    ...(upstream.apiKey ? { api_key: upstream.apiKey } : {}),
  };
}
