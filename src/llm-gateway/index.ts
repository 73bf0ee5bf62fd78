// The LLM gateway wing wired (src/domain.ts calls it): who may run which model, what agents are
// given instead of keys, and the gateway itself when it is on and has prices.
import type { Models } from '../../models/index.js';
import type { Config } from '../config/config.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { TokenBuckets } from '../rate-limit.js';
import { AgentLlms } from './agent-llm.js';
import { LlmGateway, type GatewayBudgets, type GatewayDeps } from './llm-gateway.service.js';
import type { LlmRoutes } from './llm-routes.js';
import { ModelPolicy } from './model-policy.js';
import type { PriceTable } from './prices.js';
import { llmHostPolicy } from './upstream.js';

export interface LlmGatewayParts extends Pick<GatewayDeps, 'sandboxExists' | 'sandboxConversation'> {
  config: Config;
  models: Models;
  routes: LlmRoutes;
  prices: PriceTable | null;
  budgets: GatewayBudgets;
  isAdmin(userId: string): Promise<boolean>;
  /** Whether the user chose to have their key in the sandbox for a model the gateway cannot front. */
  keyInSandboxChosen(userId: string): Promise<boolean>;
  /** The service's origin as a conversation's sandbox reaches it. */
  origin: () => string;
  metrics: Metrics;
  log: Logger;
  clock?: (() => number) | undefined;
}

export function createLlmGateway(parts: LlmGatewayParts) {
  const { config, models, routes, prices, budgets, metrics, log, clock } = parts;
  const modelPolicy = new ModelPolicy({
    serviceGlobs: config.llmGateway.allowedModels,
    Policy: models.UserLlmPolicy,
    isAdmin: parts.isAdmin,
    ...(clock ? { now: clock } : {}),
  });
  const agentLlms = new AgentLlms(routes, {
    enabled: config.llmGateway.enabled,
    modelPolicy,
    origin: parts.origin,
    keyInSandboxChosen: config.llmGateway.keyInSandboxByChoice ? parts.keyInSandboxChosen : null,
  });
  const llmGateway =
    config.llmGateway.enabled && prices
      ? new LlmGateway({
          models,
          routes,
          prices,
          budgets,
          modelPolicy,
          sandboxExists: parts.sandboxExists,
          sandboxConversation: parts.sandboxConversation,
          hosts: llmHostPolicy(config),
          userLimits: config.llmGateway.ratePerUser ? new TokenBuckets(config.llmGateway.ratePerUser, config.rateLimits.windowMs) : null,
          config: config.llmGateway,
          metrics,
          log: log.child({ component: 'llm-gateway' }),
        })
      : null;
  return { modelPolicy, agentLlms, llmGateway };
}
