// The LLM gateway's decisions (docs/llm-gateway.md), transport aside: whether a call may go
// (its token, its conversation's sandbox, the model, the price, the user's rate and the
// budgets), where it goes with which key, and what it cost once it is over. The HTTP side
// (src/http/llm-gateway.ts) moves the bytes. Every refusal happens before the provider sees
// the call; every call that reached the provider is written once to the ledger
// (models/llm-call.model.ts) and added to its conversation's totals, which the budgets read.
import crypto from 'node:crypto';
import type { LookupFunction } from 'node:net';
import type { MetricsSnapshot } from '../../contract/budgets.schema.js';
import type { Models } from '../../models/index.js';
import type { Config } from '../config/config.js';
import { AppError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { Reach } from '../git/providers/provider-hosts.js';
import type { TokenBuckets } from '../rate-limit.js';
import type { LlmRoute, LlmRoutes, LlmTotals, McpUpstream } from './llm-routes.js';
import type { PriceTable } from './prices.js';
import { familyOf, providerModel, upstreamUrl, type ApiStyle, type Family } from './upstream.js';
import type { CallUsage, ModelPrice } from './usage.js';

/** Why a call was refused, in words the agent shows; `type` is what the agent's SDK reads (budget_exceeded stops its retries). */
export class GatewayRefusal extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

export interface GatewayCall {
  id: string;
  style: Exclude<ApiStyle, 'model-info'>;
  family: Family;
  route: LlmRoute;
  price: ModelPrice;
  url: string;
  /** 'checked': every address the upstream's name resolves to passes the host rules at connect time. */
  reach: Reach;
  key: string | null;
  startedAt: number;
}

export interface McpCall {
  route: LlmRoute;
  server: McpUpstream;
  /** Where the call goes: the server's URL, or its message endpoint. */
  url: string;
  reach: Reach;
}

export type CallOutcome = 'ok' | 'provider_error' | 'unreachable' | 'aborted' | 'too_large';

/** What the gateway needs of the budgets (src/conversations/budgets/): the check before a call, the report after. */
export interface GatewayBudgets {
  /** Refuses (AppError CONFLICT) a conversation past a limit; answers whether any limit applies. */
  assertMayRun(userId: string, conversationId: string): Promise<boolean>;
  /** After a refusal: the conversation is stopped with its reason (and its webhook) if it was not yet. */
  refused(conversationId: string): Promise<void>;
  report(
    conversationId: string,
    spend: { cost: number; tokens: number; snapshot: MetricsSnapshot },
    status: string | null,
    source: 'gateway',
  ): Promise<void>;
}

export interface GatewayDeps {
  models: Models;
  routes: LlmRoutes;
  prices: PriceTable;
  budgets: GatewayBudgets;
  /** Whether the sandbox still exists (its deletion ends its conversations' tokens). */
  sandboxExists(sandboxId: string): Promise<boolean>;
  /** How the owner's base URL may be reached (the host rules, as for git providers), or null: not at all. */
  hosts: { decide(url: string, namedHost: string | null): { reach: Reach } | null; readonly lookup: LookupFunction };
  userLimits: TokenBuckets | null;
  config: Config['llmGateway'];
  metrics: Metrics;
  log: Logger;
}

export class LlmGateway {
  private readonly allowed: RegExp[];
  /** The ended calls being written (end()) and the refusals' stops being made, awaited by drain(). */
  private readonly writing = new Set<Promise<void>>();
  /** The same ended calls' writes by user, while they last (begin() waits for them under a limit). */
  private readonly writingOf = new Map<string, Set<Promise<void>>>();

  constructor(private readonly deps: GatewayDeps) {
    this.allowed = deps.config.allowedModels.map(globPattern);
  }

  /** The connect-time lookup of 'checked' calls. */
  get lookup(): LookupFunction {
    return this.deps.hosts.lookup;
  }

  get limits(): Pick<Config['llmGateway'], 'maxRequestBytes' | 'maxAnswerBytes' | 'timeoutMs'> {
    return this.deps.config;
  }

  /** A call allowed to go, or the refusal (before anything reaches the provider). */
  async begin(style: GatewayCall['style'], token: string | undefined, body: Record<string, unknown>): Promise<GatewayCall> {
    const route = await this.deps.routes.byToken(token);
    if (!route)
      throw new GatewayRefusal(401, 'invalid_api_key', 'This gateway token opens no conversation (unknown, or its sandbox was deleted)');
    if (!(await this.deps.sandboxExists(route.sandboxId)))
      throw new GatewayRefusal(401, 'invalid_api_key', 'This gateway token opens no conversation (its sandbox was deleted)');
    const family = familyOf(style);
    const asked = typeof body.model === 'string' ? body.model : '';
    // The conversation's own model only: the token is not a key to the owner's whole account.
    if (asked !== providerModel(route.model) && asked !== route.model)
      throw new GatewayRefusal(
        403,
        'model_not_allowed',
        `This conversation's gateway token is for ${route.model}, not ${asked || 'no model'}`,
      );
    if (this.allowed.length > 0 && !this.allowed.some((pattern) => pattern.test(route.model)))
      throw new GatewayRefusal(403, 'model_not_allowed', `${route.model} is not among the models this service allows (LLM_ALLOWED_MODELS)`);
    const price = this.deps.prices.priceOf(route.model, family);
    if (!price)
      throw new GatewayRefusal(
        400,
        'model_not_priced',
        `${route.model} has no price: the operator prices it in LLM_OPERATOR_PRICES before it can be used`,
      );
    const url = upstreamUrl(style, route.baseUrl);
    const decision = this.deps.hosts.decide(url, route.baseUrl === null ? null : new URL(url).origin);
    if (!decision)
      throw new GatewayRefusal(
        403,
        'upstream_not_allowed',
        'The LLM base URL in your settings points where this service may not call (LLM_UPSTREAM_HOSTS)',
      );
    const take = this.deps.userLimits?.take(route.userId);
    if (take && !take.ok)
      throw new GatewayRefusal(429, 'rate_limit_exceeded', 'Too many LLM calls for this user; retry later', take.retryAfterSeconds);
    try {
      const limited = await this.deps.budgets.assertMayRun(route.userId, route.conversationId);
      // The user's calls answered just before (an agent's previous step) may not be counted yet:
      // their writes follow their answers. Under a limit, this call waits for them and is checked
      // again, so that a call starting past the limit never reaches the provider (on this replica).
      const unwritten = this.writingOf.get(route.userId);
      if (limited && unwritten) {
        await Promise.allSettled([...unwritten]);
        await this.deps.budgets.assertMayRun(route.userId, route.conversationId);
      }
    } catch (error) {
      if (error instanceof AppError && error.code === 'CONFLICT') {
        this.deps.metrics.llmCalls.inc({ model: route.model, outcome: 'budget_exceeded' });
        // In the background: the agent is waiting for this answer (pausing it waits for its step to end).
        this.track(
          this.deps.budgets
            .refused(route.conversationId)
            .catch((err: unknown) =>
              this.deps.log.warn({ err, conversationId: route.conversationId }, 'stopping a conversation refused for its budget failed'),
            ),
        );
        // The agent SDK stops retrying at "budget_exceeded" and shows the message.
        throw new GatewayRefusal(429, 'budget_exceeded', `budget_exceeded: ${error.message}`);
      }
      throw error;
    }
    return {
      id: crypto.randomUUID(),
      style,
      family,
      route,
      price,
      url,
      reach: decision.reach,
      key: this.deps.routes.openKey(route),
      startedAt: Date.now(),
    };
  }

  /**
   * A call to one of the conversation's remote MCP servers (its key swapped in on the way out):
   * the server and how it may be reached, or the refusal. `target`: a URL the server itself gave
   * (an SSE server's message endpoint), which must be on the server's own origin.
   */
  async beginMcp(token: string | undefined, name: string, target: string | null): Promise<McpCall> {
    const route = await this.deps.routes.byToken(token);
    if (!route || !(await this.deps.sandboxExists(route.sandboxId)))
      throw new GatewayRefusal(401, 'invalid_api_key', 'This gateway token opens no conversation');
    const server = this.deps.routes.mcpServer(route, name);
    if (!server) throw new GatewayRefusal(404, 'not_found', `This conversation has no MCP server ${name} through the gateway`);
    let url = server.url;
    if (target !== null) {
      let resolved: URL;
      try {
        resolved = new URL(target, server.url);
      } catch {
        throw new GatewayRefusal(400, 'invalid_request_error', 'Not a URL');
      }
      if (resolved.origin !== new URL(server.url).origin)
        throw new GatewayRefusal(403, 'upstream_not_allowed', "An MCP message endpoint must be on its server's origin");
      url = resolved.href;
    }
    const decision = this.deps.hosts.decide(url, new URL(url).origin);
    if (!decision)
      throw new GatewayRefusal(
        403,
        'upstream_not_allowed',
        'The MCP server in your settings is where this service may not call (LLM_UPSTREAM_HOSTS)',
      );
    const take = this.deps.userLimits?.take(route.userId);
    if (take && !take.ok)
      throw new GatewayRefusal(429, 'rate_limit_exceeded', 'Too many calls for this user; retry later', take.retryAfterSeconds);
    return { route, server, url, reach: decision.reach };
  }

  /** Dollars of a call's usage at its model's price. */
  cost(call: GatewayCall, usage: CallUsage): number {
    return this.deps.prices.cost(call.price, usage);
  }

  /**
   * Writes the call once and adds its usage to its conversation (then the budgets apply the
   * limits: a conversation past its budget is stopped and its webhook sent). Never throws: a
   * failure is logged (the answer has gone to the agent). Until drain() the write is awaited.
   */
  end(call: GatewayCall, outcome: CallOutcome, status: number | null, usage: CallUsage | null): Promise<void> {
    const writing = this.track(this.record(call, outcome, status, usage));
    const { userId } = call.route;
    const ofUser = this.writingOf.get(userId) ?? new Set<Promise<void>>();
    this.writingOf.set(userId, ofUser.add(writing));
    const done = () => {
      ofUser.delete(writing);
      if (ofUser.size === 0 && this.writingOf.get(userId) === ofUser) this.writingOf.delete(userId);
    };
    writing.then(done, done);
    return writing;
  }

  /**
   * Resolves once every call that has ended is written (and every refusal's stop made): a stopping
   * service awaits it before its database closes (the answers went out just before its
   * connections closed; their writes follow).
   */
  async drain(): Promise<void> {
    while (this.writing.size > 0) await Promise.allSettled([...this.writing]);
  }

  private track(writing: Promise<void>): Promise<void> {
    this.writing.add(writing);
    const done = () => void this.writing.delete(writing);
    writing.then(done, done);
    return writing;
  }

  private async record(call: GatewayCall, outcome: CallOutcome, status: number | null, usage: CallUsage | null): Promise<void> {
    const cost = usage ? this.cost(call, usage) : 0;
    const ms = Date.now() - call.startedAt;
    const { model, conversationId, userId } = call.route;
    const { metrics } = this.deps;
    metrics.llmCalls.inc({ model, outcome });
    metrics.llmCallDuration.observe({ model, outcome }, ms / 1000);
    try {
      await this.deps.models.LlmCall.create({
        _id: call.id,
        conversationId,
        userId,
        model,
        api: call.style,
        outcome,
        status,
        promptTokens: usage ? usage.input + usage.cacheRead + usage.cacheWrite : 0,
        completionTokens: usage?.output ?? 0,
        cacheReadTokens: usage?.cacheRead ?? 0,
        cacheWriteTokens: usage?.cacheWrite ?? 0,
        cost,
        ms,
        at: new Date(),
      });
      if (!usage) return;
      metrics.llmTokens.inc({ model, kind: 'input' }, usage.input);
      metrics.llmTokens.inc({ model, kind: 'output' }, usage.output);
      metrics.llmTokens.inc({ model, kind: 'cache_read' }, usage.cacheRead);
      metrics.llmTokens.inc({ model, kind: 'cache_write' }, usage.cacheWrite);
      metrics.llmCost.inc({ model }, cost);
      const totals = await this.deps.routes.add(conversationId, {
        cost,
        promptTokens: usage.input + usage.cacheRead + usage.cacheWrite,
        completionTokens: usage.output,
        cacheReadTokens: usage.cacheRead,
        cacheWriteTokens: usage.cacheWrite,
        reasoningTokens: usage.reasoning ?? 0,
      });
      if (totals) await this.deps.budgets.report(conversationId, spendOf(model, totals), null, 'gateway');
    } catch (error) {
      this.deps.log.error({ err: error, conversationId, callId: call.id }, 'recording an LLM call failed');
    }
  }
}

/** A conversation's gateway totals as the budgets read a report (cumulative, like the agent's own). */
export function spendOf(model: string, totals: LlmTotals) {
  const tokens = totals.promptTokens + totals.completionTokens;
  return {
    cost: totals.cost,
    tokens,
    snapshot: {
      model_name: model,
      accumulated_cost: totals.cost,
      max_budget_per_task: null,
      accumulated_token_usage: {
        model,
        prompt_tokens: totals.promptTokens,
        completion_tokens: totals.completionTokens,
        cache_read_tokens: totals.cacheReadTokens,
        cache_write_tokens: totals.cacheWriteTokens,
        reasoning_tokens: totals.reasoningTokens,
        context_window: 0,
        per_turn_token: 0,
        response_id: '',
      },
    },
  };
}

/** "anthropic/*" → /^anthropic\/.*$/ */
const globPattern = (glob: string) => new RegExp(`^${glob.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`);
