// The LLM gateway's decisions (docs/llm-gateway.md), transport aside: whether a call may go
// (its token, its conversation's sandbox, the model, the price, the user's rate and the
// budgets), where it goes with which key, and what it cost once it is over. The HTTP side
// (src/http/llm-gateway.ts) moves the bytes. Every refusal happens before the provider sees
// the call; every call that reached the provider is written once to the ledger
// (models/llm-call.model.ts) and added to its conversation's totals, which the budgets read
// (call-ledger.ts, after the answer). The per-call checks read nothing in the common case: the
// route (llm-routes.ts) and the sandbox's existence are kept for 2 s, "no budget applies" for 1 s.
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
import { isSandboxRoute, type LlmRoute, type LlmRoutes, type McpUpstream } from './llm-routes.js';
import type { ModelPolicy } from './model-policy.js';
import type { PriceTable } from './prices.js';
import { familyOf, providerModel, upstreamUrl, type ApiStyle, type Family } from './upstream.js';
import type { CallUsage, ModelPrice } from './usage.js';
import { CallLedger, type CallOutcome } from './call-ledger.js';

export type { CallOutcome };

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

/** What the gateway needs of the budgets (src/conversations/budgets/): the check before a call, the report after. */
export interface GatewayBudgets {
  /** Refuses (AppError CONFLICT) a conversation past a limit; answers whether any limit applies. */
  assertMayRun(
    userId: string,
    conversationId: string,
    options?: { cached?: boolean; pending?: { conversation: number; user: number } },
  ): Promise<boolean>;
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
  /** The models the route's owner may run (LLM_ALLOWED_MODELS and an administrator's list). */
  modelPolicy: Pick<ModelPolicy, 'refusal'>;
  /** Whether the sandbox still exists (its deletion ends its conversations' tokens). */
  sandboxExists(sandboxId: string): Promise<boolean>;
  /** The conversation the sandbox's agent server reported last for its owner, or null: none yet (a sandbox route's calls count against it). */
  sandboxConversation(sandboxId: string, userId: string): Promise<string | null>;
  /** How the owner's base URL may be reached (the host rules, as for git providers), or null: not at all. */
  hosts: { decide(url: string, namedHost: string | null): { reach: Reach } | null; readonly lookup: LookupFunction };
  userLimits: TokenBuckets | null;
  config: Config['llmGateway'];
  metrics: Metrics;
  log: Logger;
}

/** How long a sandbox found to exist is taken to exist without a read (its deletion on this replica forgets it at once). */
const SANDBOX_SEEN_MS = 2_000;
const MAX_SEEN = 10_000;

export class LlmGateway {
  /** Where ended calls are written (after their answers), and the refusals' stops tracked. */
  private readonly ledger: CallLedger;
  /** Sandboxes found to exist, by when; `forgotten` counts deletions, so that a read made across one is not kept. */
  private readonly sandboxesSeen = new Map<string, number>();
  private forgotten = 0;
  /** Sandbox routes' conversations, once reported (a run's agent server has one). */
  private readonly sandboxConversations = new Map<string, string>();

  constructor(private readonly deps: GatewayDeps) {
    this.ledger = new CallLedger(deps);
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
    const opened = await this.deps.routes.byToken(token);
    if (!opened)
      throw new GatewayRefusal(401, 'invalid_api_key', 'This gateway token opens no conversation (unknown, or its sandbox was deleted)');
    if (!(await this.sandboxExists(opened.sandboxId)))
      throw new GatewayRefusal(401, 'invalid_api_key', 'This gateway token opens no conversation (its sandbox was deleted)');
    const route = await this.countedAgainst(opened);
    const family = familyOf(style);
    const asked = typeof body.model === 'string' ? body.model : '';
    // The conversation's own model only: the token is not a key to the owner's whole account.
    if (asked !== providerModel(route.model) && asked !== route.model)
      throw new GatewayRefusal(
        403,
        'model_not_allowed',
        `This conversation's gateway token is for ${route.model}, not ${asked || 'no model'}`,
      );
    const notAllowed = await this.deps.modelPolicy.refusal(route.userId, route.model, true);
    if (notAllowed) throw new GatewayRefusal(403, 'model_not_allowed', notAllowed);
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
    // The user's calls answered just before (an agent's previous step) may not be counted yet:
    // their writes follow their answers. Their costs are added to what is read, so this check is
    // never under the truth (on this replica); only when that sum is past a limit does the call
    // wait for those writes and is checked again, so that the call refused is one that would start
    // past the limit. Under no limit (the common case) this reads nothing for a second after a
    // first check (budgets.service.ts).
    const pending = this.ledger.pendingCost(route.userId, route.conversationId);
    try {
      try {
        await this.deps.budgets.assertMayRun(route.userId, route.conversationId, { cached: true, pending });
      } catch (error) {
        if (!(error instanceof AppError && error.code === 'CONFLICT' && pending.user > 0)) throw error;
        await Promise.allSettled(this.ledger.unwrittenOf(route.userId) ?? []);
        await this.deps.budgets.assertMayRun(route.userId, route.conversationId);
      }
    } catch (error) {
      if (error instanceof AppError && error.code === 'CONFLICT') {
        this.deps.metrics.llmCalls.inc({ model: route.model, outcome: 'budget_exceeded' });
        // In the background: the agent is waiting for this answer (pausing it waits for its step to end).
        this.ledger.track(
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
    if (!route || !(await this.sandboxExists(route.sandboxId)))
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

  /**
   * A sandbox route's calls count against the conversation its agent server reported there (its
   * budget, its totals, its stop); before there is one, a call is refused as "retry shortly" (the
   * SDK retries a 429), so that no call goes unbudgeted. A conversation's route is its own.
   */
  private async countedAgainst(route: LlmRoute): Promise<LlmRoute> {
    if (!isSandboxRoute(route.conversationId)) return route;
    let conversationId = this.sandboxConversations.get(route.sandboxId);
    if (!conversationId) {
      conversationId = (await this.deps.sandboxConversation(route.sandboxId, route.userId)) ?? undefined;
      if (!conversationId)
        throw new GatewayRefusal(429, 'rate_limit_exceeded', 'The conversation in this sandbox is not known yet; retry shortly', 2);
      if (this.sandboxConversations.size >= MAX_SEEN) this.sandboxConversations.clear();
      this.sandboxConversations.set(route.sandboxId, conversationId);
    }
    return { ...route, conversationId, routeId: route.conversationId };
  }

  /** Dollars of a call's usage at its model's price. */
  cost(call: GatewayCall, usage: CallUsage): number {
    return this.deps.prices.cost(call.price, usage);
  }

  /** A sandbox deleted on this replica: its tokens are refused from the next call (other replicas: within SANDBOX_SEEN_MS). */
  forgetSandbox(sandboxId: string): void {
    this.forgotten++;
    this.sandboxesSeen.delete(sandboxId);
    this.sandboxConversations.delete(sandboxId);
  }

  private async sandboxExists(sandboxId: string): Promise<boolean> {
    const seen = this.sandboxesSeen.get(sandboxId);
    const now = Date.now();
    if (seen !== undefined && now - seen < SANDBOX_SEEN_MS) return true;
    const forgotten = this.forgotten;
    const exists = await this.deps.sandboxExists(sandboxId);
    if (!exists || forgotten !== this.forgotten) this.sandboxesSeen.delete(sandboxId);
    else {
      if (this.sandboxesSeen.size >= MAX_SEEN) this.sandboxesSeen.clear();
      this.sandboxesSeen.set(sandboxId, now);
    }
    return exists;
  }

  /**
   * Writes the call once and adds its usage to its conversation, after its answer has gone
   * (call-ledger.ts). Never throws; resolves once the call is written.
   */
  end(call: GatewayCall, outcome: CallOutcome, status: number | null, usage: CallUsage | null): Promise<void> {
    return this.ledger.end(call, outcome, status, usage ? { usage, cost: this.cost(call, usage) } : null);
  }

  /** Resolves once every call that has ended is written (and every refusal's stop made): a stopping service awaits it. */
  drain(): Promise<void> {
    return this.ledger.drain();
  }
}

/** "anthropic/*" → /^anthropic\/.*$/ */
