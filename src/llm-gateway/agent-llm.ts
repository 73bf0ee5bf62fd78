// What an agent's LLM config holds (docs/llm-gateway.md, The key's way): with the gateway on,
// the model, the gateway's base URL as the sandbox reaches the service, and the conversation's
// gateway token; the owner's key and base URL stay in the service (llm-routes.ts). With it off
// (LLM_GATEWAY=off, the operator's choice for everyone), the owner's own, as before.
import { AppError } from '../errors.js';
import type { LlmRoutes, LlmUpstream } from './llm-routes.js';
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

export class AgentLlms {
  constructor(
    private readonly routes: LlmRoutes,
    private readonly enabled: boolean,
    /** The service's origin as the conversation's sandbox reaches it. */
    private readonly origin: () => string,
  ) {}

  /** The agent's LLM for a conversation (a start, or a switch to another profile). */
  async forConversation(conversationId: string, owner: { userId: string; sandboxId: string }, upstream: LlmUpstream): Promise<AgentLlm> {
    if (!this.enabled) {
      return {
        model: upstream.model,
        ...(upstream.baseUrl ? { base_url: upstream.baseUrl } : {}),
        ...(upstream.apiKey ? { api_key: upstream.apiKey } : {}),
      };
    }
    if (!frontedModel(upstream.model)) {
      throw new AppError(
        'BAD_REQUEST',
        `${upstream.model}: the LLM gateway fronts OpenAI-compatible and Anthropic models only, and this service keeps LLM keys out of sandboxes (LLM_GATEWAY=on)`,
        { reason: 'llm_provider_not_fronted' },
      );
    }
    const token = await this.routes.open(conversationId, owner, upstream);
    return { model: upstream.model, base_url: gatewayBaseUrl(this.origin(), upstream.model), api_key: token };
  }
}
